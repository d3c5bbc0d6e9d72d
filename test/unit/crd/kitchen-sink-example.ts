// One spec using every construct the converter maps, so a real apiserver can be asked whether
// it accepts each of them (test/integration/crd/apply.test.ts).
import { z } from "zod";
import { immutable, validations } from "../../../src/crd/crd.ts";
import type { CrdSource } from "../../../src/crd/crd.ts";

export const kitchenSinkSpec = z.object({
  slug: z
    .string()
    .min(5)
    .max(36)
    .regex(/^[a-z0-9-]+$/)
    .meta(immutable("slug is immutable")),
  prefixed: z.string().max(64).startsWith("kw-").endsWith("-x").optional(),
  caseless: z.string().max(16).regex(/^abc$/i).optional(),
  id: z.uuid().optional(),
  guid: z.guid().optional(),
  email: z.email().optional(),
  url: z.url().optional(),
  at: z.iso.datetime({ offset: true }).optional(),
  atUtc: z.iso.datetime().optional(),
  day: z.iso.date().optional(),
  ip: z.ipv4().optional(),
  ip6: z.ipv6().optional(),
  cidr: z.cidrv4().optional(),
  blob: z.base64().max(1024).optional(),
  count: z.number().int().min(0).max(10).default(3),
  ratio: z.number().gt(0).lt(1).optional(),
  step: z.number().int().multipleOf(5).optional(),
  small: z.int32().optional(),
  mode: z.enum(["a", "b"]).default("a"),
  flag: z.literal(true).optional(),
  maybe: z.enum(["x", "y"]).nullable().optional(),
  note: z.string().max(256).nullish(),
  port: z.union([z.number().int(), z.string()]).optional(),
  labels: z.record(z.string(), z.string().max(63)).optional(),
  limits: z.partialRecord(z.enum(["cpu", "memory"]), z.string()).optional(),
  pair: z.tuple([z.string().max(8), z.string().max(8)]).optional(),
  free: z.unknown().optional(),
  extra: z.object({ known: z.string().optional() }).loose().optional(),
  items: z
    .array(z.object({ name: z.string().max(63), value: z.string().max(256).optional() }))
    .max(20)
    .meta({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"] })
    .optional(),
  tags: z.array(z.string().max(32)).max(10).meta({ "x-kubernetes-list-type": "set" }).optional(),
  settings: z
    .object({ retries: z.number().int().min(0).max(5).default(1), verbose: z.boolean().default(false) })
    .default({ retries: 1, verbose: false }),
  both: z.intersection(z.object({ a: z.string().max(8) }), z.object({ b: z.string().max(8).optional() })).optional(),
  window: z
    .object({ start: z.number().int(), end: z.number().int() })
    .meta(validations({ rule: "self.start <= self.end", message: "start must not be after end" }))
    .optional(),
});

export function kitchenSinkSource(group = "crdtest.keyward.dev"): CrdSource {
  return {
    group,
    version: "v1alpha1",
    kind: "KitchenSink",
    plural: "kitchensinks",
    description: "Every schema construct the CRD generator maps.",
    spec: kitchenSinkSpec,
    status: z.object({ observedGeneration: z.number().int().optional() }),
    printerColumns: [{ name: "Slug", type: "string", jsonPath: ".spec.slug", description: "The slug.", priority: 0 }],
  };
}
