// The conversion webhook on kind, as the chart installs it: a Deployment of its own beside the
// operator's. Every namespaced sample (every kind) and a ClusterProviderConfig, created as
// v1alpha1, read as v1beta1 and written back from that, read as v1alpha1 equal; a ProviderConfig
// written as v1beta1 reads as v1alpha1. Then the operator is scaled to 0 and reads naming no
// version (v1beta1) still work. Then the webhook's pods are deleted one at a time, each replaced
// and Ready before the next, while two clients read and write in both versions straight to the
// apiserver: every failed request is counted, and none may fail.
import { request, Agent } from "node:https";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  apply,
  context,
  createNamespace,
  installKeyward,
  keywardKinds,
  keywardPods,
  kubectl,
  kubectlJson,
  kubectlResult,
  samples,
  uninstallKeyward,
  waitFor,
  type KubeObject,
  type List,
} from "./support.ts";
import { keywardSamples } from "../support/samples.ts";

const release = "kw-conv";
const systemNs = "kw-e2e-conv-system";
const teamNs = "kw-e2e-conv";
const webhookPodsSelector = `app.kubernetes.io/name=keyward-webhook,app.kubernetes.io/instance=${release}`;
/** Nothing answers here: the objects need not be Ready for their conversion. */
const BASE_URL = "http://service.kw-e2e-conv.invalid:8080";

type Obj = KubeObject & { apiVersion: string; kind: string; spec?: Record<string, unknown> };

const pluralOf: Record<string, string> = {
  ProviderConfig: "providerconfigs",
  ClusterProviderConfig: "clusterproviderconfigs",
  Project: "projects",
  ProjectMembership: "projectmemberships",
  SecretSync: "secretsyncs",
  AccessToken: "accesstokens",
  CertificateProfile: "certificateprofiles",
};

const where = (o: { kind: string }): string[] => (o.kind === "ClusterProviderConfig" ? [] : ["-n", teamNs]);
const read = (o: { kind: string; metadata: { name: string } }, version: string): Promise<Obj> =>
  kubectlJson<Obj>([...where(o), "get", `${pluralOf[o.kind] ?? "?"}.${version}.keyward.dev`, o.metadata.name]);

/** The sample ClusterProviderConfig, its Secret in keyward's namespace. */
function clusterProviderConfig(): Obj {
  const [doc] = keywardSamples("v1alpha1", ["clusterproviderconfig.yaml"]) as Obj[];
  if (!doc) throw new Error("no ClusterProviderConfig sample");
  return { ...doc, metadata: { name: "kw-e2e-conv-shared" }, spec: { ...doc.spec, baseUrl: BASE_URL } };
}

/** Requests straight to the apiserver with the kubeconfig's credentials, one keep-alive agent. */
async function apiClient(): Promise<(method: string, path: string, body?: unknown) => Promise<{ status: number; text: string }>> {
  const kc = new KubeConfig();
  kc.loadFromFile(context().kubeconfig);
  const server = new URL(kc.getCurrentCluster()?.server ?? "");
  const tls: { ca?: Buffer | string; cert?: Buffer | string; key?: Buffer | string } = {};
  await kc.applyToHTTPSOptions(tls);
  const agent = new Agent({ keepAlive: true, maxSockets: 4, ...tls });
  return (method, path, body) =>
    new Promise((resolve) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        {
          host: server.hostname,
          port: server.port,
          method,
          path,
          agent,
          headers: {
            accept: "application/json",
            ...(payload ? { "content-type": method === "PATCH" ? "application/merge-patch+json" : "application/json" } : {}),
          },
        },
        (res) => {
          let text = "";
          res.on("data", (c: Buffer) => (text += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      // A request that could not be sent or answered counts as a failure with status 0.
      req.on("error", (err) => resolve({ status: 0, text: err.message }));
      req.end(payload);
    });
}

interface Tally {
  requests: number;
  failed: { what: string; status: number; text: string }[];
}

let stop = false;

/** Reads and writes in both versions until `stop`: lists and gets (converted and not), merge patches through each. */
async function clientLoop(call: Awaited<ReturnType<typeof apiClient>>, tally: Tally, id: number, projectName: string): Promise<void> {
  const ns = `/namespaces/${teamNs}`;
  for (let i = 0; !stop; i++) {
    const steps: [string, string, unknown?][] = [
      ["GET", `/apis/keyward.dev/v1beta1${ns}/projects`],
      ["GET", `/apis/keyward.dev/v1alpha1${ns}/projects/${projectName}`],
      [
        "PATCH",
        `/apis/keyward.dev/v1beta1${ns}/providerconfigs/churn-beta`,
        { metadata: { annotations: { [`e2e.keyward.dev/c${id}`]: `${i}` } } },
      ],
      ["GET", `/apis/keyward.dev/v1beta1${ns}/secretsyncs`],
      [
        "PATCH",
        `/apis/keyward.dev/v1alpha1${ns}/providerconfigs/churn-alpha`,
        { metadata: { annotations: { [`e2e.keyward.dev/c${id}`]: `${i}` } } },
      ],
      ["GET", `/apis/keyward.dev/v1beta1${ns}/providerconfigs/churn-alpha`],
    ];
    for (const [method, path, body] of steps) {
      const answer = await call(method, path, body);
      tally.requests++;
      if (answer.status < 200 || answer.status >= 300)
        tally.failed.push({ what: `${method} ${path}`, status: answer.status, text: answer.text.slice(0, 300) });
    }
  }
}

async function webhookPods(): Promise<KubeObject[]> {
  return (await kubectlJson<List>(["-n", systemNs, "get", "pods", "-l", webhookPodsSelector])).items;
}

const podReady = (p: KubeObject): boolean =>
  ((p as unknown as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions ?? []).some(
    (c) => c.type === "Ready" && c.status === "True",
  );

/** Two webhook pods Ready, none terminating, and both ready behind the Service. */
async function webhookWhole(): Promise<boolean | undefined> {
  const pods = await webhookPods();
  const live = pods.filter((p) => p.metadata.deletionTimestamp === undefined);
  if (pods.length !== 2 || live.length !== 2 || !live.every(podReady)) return undefined;
  const slices = await kubectlJson<List<{ endpoints?: { conditions?: { ready?: boolean } }[] } & KubeObject>>([
    "-n",
    systemNs,
    "get",
    "endpointslices.discovery.k8s.io",
    "-l",
    `kubernetes.io/service-name=${release}-keyward-webhook`,
  ]);
  const ready = slices.items.flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions?.ready === true).length;
  return ready === 2 ? true : undefined;
}

describe("the conversion webhook on kind", () => {
  const created: Obj[] = [];

  beforeAll(async () => {
    await createNamespace(systemNs);
    await createNamespace(teamNs);
    await installKeyward(release, systemNs);
    await waitFor("the webhook whole", webhookWhole, 180_000);
  }, 900_000);

  afterAll(async () => {
    stop = true;
    await kubectlResult(["delete", "clusterproviderconfigs.v1alpha1.keyward.dev", "kw-e2e-conv-shared", "--ignore-not-found"]);
    await uninstallKeyward(release, systemNs);
    await kubectlResult(["delete", "namespace", teamNs, "--wait=false"]);
  }, 300_000);

  it("every kind created as v1alpha1 reads as v1beta1, and written back from it reads as the same v1alpha1; one written as v1beta1 reads as v1alpha1", async () => {
    const docs = [...samples(BASE_URL, "v1alpha1"), clusterProviderConfig()] as Obj[];
    await apply(
      docs.filter((d) => d.kind === "Secret"),
      teamNs,
    );
    const keyward = docs.filter((d) => d.apiVersion === "keyward.dev/v1alpha1");
    expect(new Set(keyward.map((d) => d.kind))).toEqual(new Set(Object.keys(pluralOf)));
    await apply(
      keyward.filter((d) => d.kind !== "ClusterProviderConfig"),
      teamNs,
    );
    await apply(keyward.filter((d) => d.kind === "ClusterProviderConfig"));
    created.push(...keyward);
    for (const doc of keyward) {
      const alpha = await read(doc, "v1alpha1");
      const beta = await read(doc, "v1beta1");
      expect(beta.apiVersion, `${doc.kind} ${doc.metadata.name}`).toBe("keyward.dev/v1beta1");
      expect(beta.metadata.uid).toBe(alpha.metadata.uid);
      // Written back as v1beta1 (a replace of the whole object, retried when keyward wrote in between).
      await waitFor(
        `${doc.kind} ${doc.metadata.name} replaced as v1beta1`,
        async () => {
          const fresh = await read(doc, "v1beta1");
          const r = await kubectlResult([...where(doc), "replace", "-f", "-"], { input: JSON.stringify(fresh) });
          return r.code === 0 ? true : undefined;
        },
        60_000,
      );
      // Every field it had, with the same values (v1beta1's schema may default a field more).
      const again = await read(doc, "v1alpha1");
      expect(again.spec, `${doc.kind} ${doc.metadata.name}`).toMatchObject(alpha.spec ?? {});
    }
    // Two ProviderConfigs for the client loop below: one written as v1beta1, one as v1alpha1.
    const pc = keyward.find((d) => d.kind === "ProviderConfig") as Obj;
    const pcBeta = await read(pc, "v1beta1");
    await apply(
      [{ apiVersion: "keyward.dev/v1beta1", kind: "ProviderConfig", metadata: { name: "churn-beta" }, spec: pcBeta.spec }],
      teamNs,
    );
    await apply([{ ...pc, metadata: { name: "churn-alpha" } }], teamNs);
    const written = await read({ kind: "ProviderConfig", metadata: { name: "churn-beta" } }, "v1alpha1");
    expect(written.apiVersion).toBe("keyward.dev/v1alpha1");
    expect(written.spec).toMatchObject((await read(pc, "v1alpha1")).spec ?? {});
  });

  it("with the operator scaled to 0, reads naming no version (v1beta1) still work: the webhook runs apart", async () => {
    await kubectl(["-n", systemNs, "scale", `deployment/${release}-keyward`, "--replicas=0"]);
    await waitFor(
      "the operator's pods gone",
      async () => ((await keywardPods(systemNs, release)).length === 0 ? true : undefined),
      180_000,
    );
    expect((await webhookPods()).filter(podReady)).toHaveLength(2);
    for (const kind of keywardKinds) {
      const unqualified = await kubectlJson<List<Obj>>(["-n", teamNs, "get", `${kind}.keyward.dev`]);
      const alpha = await kubectlJson<List<Obj>>(["-n", teamNs, "get", `${kind}.v1alpha1.keyward.dev`]);
      expect(unqualified.items.length, kind).toBeGreaterThan(0);
      expect(unqualified.items.map((o) => [o.apiVersion, o.metadata.name])).toEqual(
        alpha.items.map((o) => ["keyward.dev/v1beta1", o.metadata.name]),
      );
    }
    const shared = await kubectlJson<Obj>(["get", "clusterproviderconfigs.keyward.dev", "kw-e2e-conv-shared"]);
    expect(shared.apiVersion).toBe("keyward.dev/v1beta1");
  });

  it("its pods deleted one at a time while two clients read and write in both versions: no request fails", async () => {
    const call = await apiClient();
    const project = created.find((d) => d.kind === "Project") as Obj;
    const tallies: Tally[] = [
      { requests: 0, failed: [] },
      { requests: 0, failed: [] },
    ];
    stop = false;
    const loops = tallies.map((t, i) => clientLoop(call, t, i, project.metadata.name));
    const total = (): number => tallies.reduce((n, t) => n + t.requests, 0);
    const original = (await webhookPods()).map((p) => p.metadata.name);
    expect(original).toHaveLength(2);
    const counts: number[] = [];
    for (const name of original) {
      const before = total();
      // kubectl waits until the pod is gone (its SIGTERM, the 5 s drain, the exit).
      await kubectl(["-n", systemNs, "delete", "pod", name, "--wait=true", "--timeout=120s"]);
      await waitFor(`a replacement of ${name} Ready behind the Service`, webhookWhole, 180_000);
      counts.push(total() - before);
    }
    // A few more rounds on the two new pods alone.
    const settled = total();
    await waitFor("60 more requests", () => Promise.resolve(total() >= settled + 60 ? true : undefined), 120_000);
    stop = true;
    await Promise.all(loops);
    const failed = tallies.flatMap((t) => t.failed);
    process.stderr.write(
      `[e2e conversion] ${total()} requests (${counts.join(" and ")} while each pod was replaced), ${failed.length} failed\n`,
    );
    expect((await webhookPods()).map((p) => p.metadata.name).filter((n) => original.includes(n))).toEqual([]);
    expect(counts.every((n) => n > 0)).toBe(true);
    expect(failed).toEqual([]);
  });
});
