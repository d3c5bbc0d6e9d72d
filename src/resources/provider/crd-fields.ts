// The CRD pieces both provider kinds (ProviderConfig, ClusterProviderConfig) are made of: the
// connection fields, tokenAuth, the tokenAuth status fields and the printer columns. Data only;
// each kind's spec, status and crdSource stay in its own file.
//
// May import: zod, src/engine, src/resources/common.ts and other files of src/resources/provider;
// never a kind's file.
import { z } from "zod";
import type { PrinterColumn } from "../../engine/kind.ts";
import { ageColumn, bounds, conditionEdits, initialismEdits, timeEdits } from "../common.ts";
import type { Edit } from "../../lib/conversion.ts";
import { DEFAULT_CREDENTIALS_KEY } from "./credentials.ts";
import { GO_DURATION_PATTERN } from "../../lib/duration.ts";

/** A Secret and the key in it that holds a token. */
export const secretKeySelector = (where: string) =>
  z.object({
    name: z.string().min(1).max(253).describe(`Secret ${where}.`),
    key: z.string().min(1).max(253).optional().describe("Key in the Secret holding the token. Default: token."),
  });

/** Self-rotating credentials: a bootstrap token used only to mint short-lived access tokens. */
/** When to renew a token before it expires: a Go-style duration (the token schedule reads it). */
export const renewBeforeSchema = (description: string) => z.string().max(32).regex(GO_DURATION_PATTERN).optional().describe(description);

export const tokenAuthSchema = (where: string) =>
  z
    .object({
      identityId: z.guid().describe("The machine identity keyward mints its access tokens for (create-token)."),
      bootstrapSecretRef: secretKeySelector(where).describe(
        "The Secret holding the bootstrap token, used only to call create-token; never for anything else and never copied.",
      ),
      renewBefore: renewBeforeSchema(
        "Mint the next access token this long before the current one expires (10m, 1h30m; at most half its lifetime). Default: a third of its lifetime, as AccessToken.",
      ),
    })
    .strict()
    .describe(
      "Instead of credentialsSecretRef: keyward mints short-lived access tokens for the identity with the bootstrap token, uses them for every call and mints the next one before the current expires. status.tokenExpiresAt shows when the current one expires.",
    );

/** Fields every provider config shares (ProviderConfig and ClusterProviderConfig). */
export const connectionFields = {
  baseUrl: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .describe("Base URL of the service, e.g. https://secrets.example.com (paths /api/... are appended)."),
  timeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(300)
    .optional()
    .describe(
      "Timeout of one request to the service, in seconds; the chart's maxRequestTimeoutSeconds (30 by default) caps it, and the Ready message says so. Default: 10.",
    ),
  rateLimit: z
    .object({
      requestsPerSecond: z.number().min(0.01).max(10000).describe("Sustained request rate to this base URL."),
      burst: z.number().int().min(1).max(10000).describe("Requests allowed at once above the rate."),
    })
    .optional()
    .describe(
      "Client-side rate limit of these credentials (base URL and token: the service limits per token), to stay under the service's limits; never shared with another config's limit. Default: 2/s, burst 10.",
    ),
  caBundle: z.string().max(65536).optional().describe("PEM CA bundle to trust for an https baseUrl with a private CA."),
};

/** Status of a tokenAuth config: when its current access token expires and the next is minted; never the token. */
export const tokenStatusFields = {
  tokenExpiresAt: z.string().max(bounds.TIME).optional().describe("tokenAuth: when the current access token expires (RFC 3339)."),
  tokenRenewAt: z.string().max(bounds.TIME).optional().describe("tokenAuth: when keyward mints the next access token (RFC 3339)."),
};

/** Printer columns of ProviderConfig and ClusterProviderConfig alike. */
export const providerConfigColumns: PrinterColumn[] = [
  { name: "URL", type: "string", jsonPath: ".spec.baseUrl" },
  { name: "Ready", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].status` },
  { name: "Reason", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].reason`, priority: 1 },
  { name: "Token-Expires", type: "string", jsonPath: ".status.tokenExpiresAt", priority: 1 },
  ageColumn,
];

/** What both provider kinds change from v1alpha1 to v1beta1 (docs/api-review.md), beside each kind's own. */
export const providerConfigV1beta1Edits: readonly Edit[] = [
  ...conditionEdits,
  ...initialismEdits("spec.baseUrl", "spec.tokenAuth.identityId", "status.baseUrl"),
  { op: "default", path: "spec.credentialsSecretRef.key", value: DEFAULT_CREDENTIALS_KEY },
  { op: "default", path: "spec.tokenAuth.bootstrapSecretRef.key", value: DEFAULT_CREDENTIALS_KEY },
  ...timeEdits("status.tokenExpiresAt", "status.tokenRenewAt"),
];
