// keyward installed by its Helm chart as users install it: the release's packaged chart with its
// default image (the release's, loaded from its OCI archive), two replicas with leader election,
// in a namespace enforcing Pod Security restricted, the emulator in the cluster. The tests of this file run in order on
// one install; the last one uninstalls it.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Bom } from "../../hack/release/sbom.ts";
import { e2eKubernetesVersion, minorOf, supportedMinors } from "../controlplane/versions.ts";
import {
  apply,
  context,
  countBy,
  createNamespace,
  deployEmulator,
  emulatorRequests,
  helm,
  installKeyward,
  keywardKinds,
  keywardObjects,
  keywardPods,
  kubectl,
  kubectlJson,
  kubectlResult,
  samples,
  waitAllReady,
  waitFor,
  type Emulator,
  type KubeObject,
  type List,
  uninstallKeyward,
} from "./support.ts";

const release = "kw-e2e";
const systemNs = "kw-e2e-system";
const emulatorNs = "kw-e2e-emulator";
const samplesNs = "kw-e2e-samples";
const fullname = "kw-e2e-keyward"; // <release>-<chart>
const tagOf = (image: string): string => image.slice(image.lastIndexOf(":") + 1);

interface Pod extends KubeObject {
  spec: {
    securityContext?: Record<string, unknown>;
    containers: {
      name: string;
      image: string;
      resources?: { limits?: Record<string, string> };
      securityContext?: Record<string, unknown>;
    }[];
  };
  status: {
    phase: string;
    containerStatuses?: { name: string; ready: boolean; restartCount: number; imageID: string; image: string }[];
    conditions?: { type: string; status: string }[];
  };
}

let emulator: Emulator;
let sampleCount = 0;

async function leaseHolder(): Promise<string> {
  const lease = await kubectlJson<{ spec: { holderIdentity?: string } }>(["-n", systemNs, "get", "lease", `${fullname}-leader`]);
  return lease.spec.holderIdentity ?? "";
}

async function runningPods(): Promise<Pod[]> {
  return (await keywardPods(systemNs, release)).filter((p) => p.metadata.deletionTimestamp === undefined) as Pod[];
}

const scraper = "metrics-scraper";

describe("keyward installed by its chart", () => {
  beforeAll(async () => {
    await createNamespace(emulatorNs);
    emulator = await deployEmulator(emulatorNs);
    await createNamespace(systemNs);
    // keyward's namespace enforces Pod Security "restricted", as a platform team's would.
    await kubectl([
      "label",
      "namespace",
      systemNs,
      "pod-security.kubernetes.io/enforce=restricted",
      "pod-security.kubernetes.io/enforce-version=latest",
    ]);
    await installKeyward(release, systemNs, [
      "--set",
      "replicas=2",
      "--set",
      "logLevel=debug",
      "--set-json",
      `metrics.readers=[{"kind":"ServiceAccount","name":"${scraper}","namespace":"${systemNs}"}]`,
    ]);
    await kubectl(["-n", systemNs, "create", "serviceaccount", scraper]);
  }, 600_000);

  afterAll(async () => {
    // Leave nothing running for the next file (helm uninstall is also what the last test checks).
    await uninstallKeyward(release, systemNs);
  }, 300_000);

  test("the cluster runs the e2e's Kubernetes release, the oldest supported minor: its apiserver and its kubelet", async () => {
    const version = await kubectlJson<{ serverVersion: { gitVersion: string } }>(["version", "-o", "json"]);
    const nodes = await kubectlJson<List<KubeObject & { status: { nodeInfo: { kubeletVersion: string } } }>>(["get", "nodes"]);
    const minors = [version.serverVersion.gitVersion, ...nodes.items.map((n) => n.status.nodeInfo.kubeletVersion)].map(minorOf);
    // A cluster of one's own (KEYWARD_E2E_KUBECONFIG) runs whichever supported minor it runs.
    const expected = process.env.KEYWARD_E2E_KUBECONFIG ? minors[0] : minorOf(e2eKubernetesVersion());
    expect(supportedMinors()).toContain(expected);
    expect(minors).toEqual(minors.map(() => expected));
  });

  test("the pods run with the chart's security context and memory limit, and pass their probes", async () => {
    const pods = await waitFor(
      "two Ready keyward pods",
      async () => {
        const all = (await keywardPods(systemNs, release)) as Pod[];
        return all.length === 2 && all.every((p) => p.status.containerStatuses?.every((c) => c.ready)) ? all : undefined;
      },
      180_000,
    );
    for (const pod of pods) {
      const container = pod.spec.containers.find((c) => c.name === "keyward");
      expect(container?.image).toBe(context().keywardImage);
      expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 });
      expect(container?.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      expect(container?.resources?.limits?.["memory"]).toBe("288Mi");
      // What the kernel enforces, seen from inside the running container (through node: the
      // image has no shell and no coreutils).
      const node = (script: string) => ["-n", systemNs, "exec", pod.metadata.name, "-c", "keyward", "--", "node", "-e", script];
      expect((await kubectl(node("console.log(process.getuid())"))).trim()).toBe("65532");
      const write = await kubectlResult(node('require("node:fs").writeFileSync("/app/written", "x")'));
      expect(write.code).not.toBe(0);
      expect(write.stderr).toMatch(/EROFS: read-only file system/);
      const limit = await kubectl(
        node(
          'const fs = require("node:fs"); for (const f of ["/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max"]) if (fs.existsSync(f)) { console.log(fs.readFileSync(f, "utf8").trim()); break; }',
        ),
      );
      expect(Number(limit.trim())).toBe(288 * 1024 * 1024);
      // Readiness passed (Ready above); liveness: no restarts and no failed probe events.
      expect(pod.status.containerStatuses?.[0]?.restartCount).toBe(0);
    }
    // (A readiness probe may fail while Node starts; a failed liveness probe would be a restart.)
    const events = await kubectlJson<List<KubeObject & { reason?: string; message?: string }>>([
      "-n",
      systemNs,
      "get",
      "events",
      "--field-selector",
      "reason=Unhealthy",
    ]);
    expect(events.items.map((e) => e.message).filter((m) => m?.startsWith("Liveness"))).toEqual([]);
    // The probes' endpoints answer through the pod, as the kubelet calls them.
    const probe = await kubectl(["get", "--raw", `/api/v1/namespaces/${systemNs}/pods/${pods[0]?.metadata.name ?? ""}:8081/proxy/readyz`]);
    expect(probe.trim()).toBe("ok");
  }, 300_000);

  test("the pods run in a namespace enforcing Pod Security restricted, which refuses a pod that is not", async () => {
    const ns = await kubectlJson(["get", "namespace", systemNs]);
    expect(ns.metadata.labels?.["pod-security.kubernetes.io/enforce"]).toBe("restricted");
    // The label is enforced: a pod that may run as root and escalate is refused at admission.
    const refused = await kubectlResult([
      "-n",
      systemNs,
      "run",
      "not-restricted",
      "--image",
      context().keywardImage,
      "--restart=Never",
      "--dry-run=server",
    ]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/violates PodSecurity "restricted:latest"/);
    // keyward's pods are admitted there and Ready (the first test waited for it), from the release's image.
    const pods = await runningPods();
    expect(pods).toHaveLength(2);
    expect(
      pods.every((p) => p.status.containerStatuses?.[0]?.ready === true && p.spec.containers[0]?.image === context().keywardImage),
    ).toBe(true);
  });

  test("the image has no shell: kubectl exec -- sh fails, and so does /bin/sh", async () => {
    const [pod] = await runningPods();
    for (const shell of ["sh", "/bin/sh", "bash"]) {
      const exec = await kubectlResult(["-n", systemNs, "exec", pod?.metadata.name ?? "", "-c", "keyward", "--", shell, "-c", "true"]);
      expect(exec.code, shell).not.toBe(0);
      expect(exec.stderr, shell).toMatch(/executable file not found|no such file or directory/);
    }
    // node runs (the exec path works): the failures above are the missing shell, not exec.
    expect(
      (await kubectl(["-n", systemNs, "exec", pod?.metadata.name ?? "", "-c", "keyward", "--", "node", "-p", "process.version"])).trim(),
    ).toMatch(/^v24\./);
  });

  test("the release's SBOM lists every npm package of the running image's node_modules, every Debian package of its status.d, and its Node", async () => {
    const [pod] = await runningPods();
    // Read inside the running container, with its own node (no shell, no find).
    const script = [
      'const fs = require("node:fs"), path = require("node:path"); const npm = [];',
      "function walk(dir) { if (!fs.existsSync(dir)) return; for (const e of fs.readdirSync(dir)) { if (e.startsWith('.')) continue;",
      "  const full = path.join(dir, e); const pkgs = e.startsWith('@') ? fs.readdirSync(full).map((x) => path.join(full, x)) : [full];",
      "  for (const pkg of pkgs) { const pj = path.join(pkg, 'package.json');",
      "    if (fs.existsSync(pj)) { const j = JSON.parse(fs.readFileSync(pj, 'utf8')); npm.push(j.name + '@' + j.version); }",
      "    walk(path.join(pkg, 'node_modules')); } } }",
      'walk("/app/node_modules");',
      'const debs = fs.readdirSync("/var/lib/dpkg/status.d").filter((f) => !f.endsWith(".md5sums"));',
      "console.log(JSON.stringify({ npm: npm.sort(), debs: debs.sort(), node: process.versions.node }));",
    ].join("\n");
    const inImage = JSON.parse(
      await kubectl(["-n", systemNs, "exec", pod?.metadata.name ?? "", "-c", "keyward", "--", "node", "-e", script]),
    ) as {
      npm: string[];
      debs: string[];
      node: string;
    };
    expect(inImage.npm.length).toBeGreaterThan(10);
    expect(inImage.debs).toEqual(["base-files", "ca-certificates", "gcc-12-base", "libc6", "libgcc-s1", "libstdc++6"]);
    const sbom = JSON.parse(readFileSync(context().keywardSbom, "utf8")) as Bom;
    const libraries = sbom.components.filter((c) => c.type === "library");
    expect(
      libraries
        .filter((c) => c.purl?.startsWith("pkg:npm/"))
        .map((c) => `${c.group ? `${c.group}/` : ""}${c.name}@${c.version}`)
        .sort(),
    ).toEqual(inImage.npm);
    expect(
      libraries
        .filter((c) => c.purl?.startsWith("pkg:deb/debian/"))
        .map((c) => c.name)
        .sort(),
    ).toEqual(inImage.debs);
    expect(sbom.components.find((c) => c.name === "node")?.version).toBe(inImage.node);
    expect(sbom.metadata.component).toMatchObject({
      name: context().keywardImage.replace(/:[^:/]+$/, ""),
      version: context().keywardVersion,
    });
  });

  test("/metrics answers a caller allowed to read it (TokenReview + SubjectAccessReview), and refuses one without a token", async () => {
    // The apiserver's service proxy forwards no credentials: an anonymous scrape.
    const anonymous = await kubectlResult([
      "get",
      "--raw",
      `/api/v1/namespaces/${systemNs}/services/http:${fullname}-metrics:8080/proxy/metrics`,
    ]);
    expect(anonymous.code).not.toBe(0);
    expect(anonymous.stdout).not.toMatch(/keyward_api_requests_total/);
    // A ServiceAccount bound to the chart's metrics-reader role (metrics.readers), as Prometheus is.
    const token = (await kubectl(["-n", systemNs, "create", "token", scraper, "--duration=10m"])).trim();
    const pod = (await runningPods())[0]?.metadata.name ?? "";
    const scrape =
      "fetch('http://127.0.0.1:8080/metrics',{headers:{authorization:'Bearer '+require('fs').readFileSync(0,'utf8')}}).then(async r=>{process.stdout.write(String(r.status)+'\\n'+await r.text())})";
    const answer = await kubectl(["-n", systemNs, "exec", "-i", pod, "-c", "keyward", "--", "node", "-e", scrape], { input: token });
    const [status, ...rest] = answer.split("\n");
    expect(status).toBe("200");
    const body = rest.join("\n");
    expect(body).toMatch(/^# HELP keyward_api_requests_total /m);
    // The pod may be the standby (no series yet): what both replicas serve.
    expect(body).toMatch(/^# TYPE keyward_api_requests_total counter$/m);
    expect(body).toMatch(/^# TYPE controller_runtime_reconcile_total counter$/m);
  });

  test("every sample of config/samples reaches Ready", async () => {
    await createNamespace(samplesNs);
    const docs = samples(emulator.baseUrl);
    sampleCount = docs.filter((d) => d.apiVersion.startsWith("keyward.dev/")).length;
    expect(sampleCount).toBeGreaterThanOrEqual(13);
    await apply(docs, samplesNs);
    const objects = await waitAllReady(samplesNs, sampleCount, 300_000);
    expect(new Set(objects.map((o) => o.kind))).toEqual(
      new Set(["ProviderConfig", "Project", "ProjectMembership", "SecretSync", "AccessToken", "CertificateProfile"]),
    );
    // The AccessToken wrote its Secret.
    const secret = await kubectlJson<{ data: Record<string, string> }>(["-n", samplesNs, "get", "secret", "ci-pipeline-token"]);
    expect(Object.keys(secret.data).length).toBeGreaterThan(0);
  }, 400_000);

  test("two replicas: delete the leader pod, the other takes over, nothing is created twice", async () => {
    const holder = await waitFor("a lease holder", async () => (await leaseHolder()) || undefined, 60_000);
    const pods = await runningPods();
    expect(pods.map((p) => p.metadata.name)).toContain(holder);
    const standby = pods.find((p) => p.metadata.name !== holder)?.metadata.name;
    expect(standby).toBeDefined();

    // With the node cordoned the Deployment's replacement pod cannot start and race the standby
    // for the lease: the running standby has to take over.
    const [node] = (await kubectlJson<List>(["get", "nodes"])).items;
    const nodeName = node?.metadata.name ?? "";
    await kubectl(["cordon", nodeName]);
    try {
      await kubectl(["-n", systemNs, "delete", "pod", holder, "--wait=false"]);
      const newHolder = await waitFor(
        "the standby pod to take the lease",
        async () => {
          const h = await leaseHolder();
          return h !== "" && h !== holder ? h : undefined;
        },
        180_000,
      );
      expect(newHolder).toBe(standby);
      // The new leader reconciles: a Project created after the takeover becomes Ready.
      await apply(
        [
          {
            apiVersion: "keyward.dev/v1alpha1",
            kind: "Project",
            metadata: { name: "after-takeover" },
            spec: { name: "After takeover", slug: "after-takeover", type: "secret-manager" },
          },
        ],
        samplesNs,
      );
      await waitAllReady(samplesNs, sampleCount + 1, 180_000);
    } finally {
      await kubectl(["uncordon", nodeName]);
    }

    await kubectl(["-n", systemNs, "rollout", "status", `deployment/${fullname}`, "--timeout=180s"]);

    const requests = await emulatorRequests(emulator);
    const projectCreates = countBy(requests, "createProject", (r) => (r.body as { slug?: string }).slug ?? "?");
    expect(
      [...projectCreates.values()].every((n) => n === 1),
      JSON.stringify([...projectCreates]),
    ).toBe(true);
    expect(projectCreates.get("after-takeover")).toBe(1);
    expect(projectCreates.get("payments-team")).toBe(1);
    const syncCreates = countBy(requests, "createSecretSync", (r) => `${r.path} ${(r.body as { name?: string }).name ?? "?"}`);
    expect(syncCreates.size).toBe(7);
    expect(
      [...syncCreates.values()].every((n) => n === 1),
      JSON.stringify([...syncCreates]),
    ).toBe(true);
  }, 600_000);

  test("helm upgrade to a new image tag while sync requests are pending: each is handled exactly once", async () => {
    const syncs = (await keywardObjects(samplesNs)).filter((o) => o.kind === "SecretSync");
    expect(syncs.length).toBe(7);
    const before = countBy(await emulatorRequests(emulator), "triggerSecretSync", (r) => r.path);
    const value = `e2e-upgrade-${Date.now()}`;
    await kubectl([
      "-n",
      samplesNs,
      "annotate",
      "secretsyncs.keyward.dev",
      "--all",
      `keyward.dev/sync-requested-at=${value}`,
      "--overwrite",
    ]);
    await helm([
      "upgrade",
      release,
      context().keywardChart,
      "-n",
      systemNs,
      "--reuse-values",
      "--wait",
      "--timeout",
      "5m",
      // A new tag of the same repository, as a user's upgrade to a patch release.
      "--set",
      `image.tag=${tagOf(context().keywardImageNext)}`,
    ]);
    const pods = await waitFor(
      "the upgraded pods",
      async () => {
        const all = await runningPods();
        return all.length === 2 &&
          all.every((p) => p.spec.containers[0]?.image === context().keywardImageNext && p.status.containerStatuses?.[0]?.ready)
          ? all
          : undefined;
      },
      300_000,
    );
    expect(pods).toHaveLength(2);
    const handled = await waitFor(
      "every SecretSync to record the request handled",
      async () => {
        const all = (await keywardObjects(samplesNs)).filter((o) => o.kind === "SecretSync");
        return all.every((o) => o.status?.["lastHandledSyncRequest"] === value) ? all : undefined;
      },
      300_000,
    );
    expect(handled).toHaveLength(7);
    // Give a late duplicate a chance to show: every sync settles (no pending request) first.
    await waitFor(
      "no pending request left",
      async () => {
        const all = (await keywardObjects(samplesNs)).filter((o) => o.kind === "SecretSync");
        return all.every((o) => o.status?.["pendingRequest"] === undefined) ? true : undefined;
      },
      120_000,
    );
    const after = countBy(await emulatorRequests(emulator), "triggerSecretSync", (r) => r.path);
    for (const sync of syncs) {
      const syncId = typeof sync.status?.["syncId"] === "string" ? sync.status["syncId"] : "none";
      const path = [...after.keys()].find((p) => p.endsWith(`/${syncId}/sync-secrets`));
      expect(path, `a trigger of ${sync.metadata.name}`).toBeDefined();
      expect((after.get(path ?? "") ?? 0) - (before.get(path ?? "") ?? 0), sync.metadata.name).toBe(1);
    }
  }, 900_000);

  test("helm uninstall leaves the CRDs and the resources, as the chart documents, and releases keyward's finalizers", async () => {
    const objectsBefore = await keywardObjects(samplesNs);
    const requestsBefore = (await emulatorRequests(emulator)).length;
    await helm(["uninstall", release, "-n", systemNs, "--wait"]);
    await waitFor("keyward's pods gone", async () => ((await keywardPods(systemNs, release)).length === 0 ? true : undefined), 120_000);
    const crds = await kubectlJson<List>(["get", "crd", ...keywardKinds.map((k) => `${k}.keyward.dev`)]);
    expect(crds.items).toHaveLength(6);
    const objectsAfter = await keywardObjects(samplesNs);
    expect(objectsAfter.map((o) => o.metadata.uid).sort()).toEqual(objectsBefore.map((o) => o.metadata.uid).sort());
    // The pre-delete hook stopped keyward and released its finalizers: nothing deleted later
    // (an object, the namespace) waits for a keyward that is gone.
    expect(objectsBefore.some((o) => (o.metadata.finalizers ?? []).some((f) => f.startsWith("keyward.dev/")))).toBe(true);
    expect(
      objectsAfter.flatMap((o) =>
        (o.metadata.finalizers ?? []).filter((f) => f.startsWith("keyward.dev/")).map((f) => `${o.kind}/${o.metadata.name}: ${f}`),
      ),
    ).toEqual([]);
    const secrets = await kubectlJson<List>(["-n", samplesNs, "get", "secrets"]);
    expect(secrets.items.filter((o) => (o.metadata.finalizers ?? []).includes("keyward.dev/in-use")).map((o) => o.metadata.name)).toEqual(
      [],
    );
    // Nothing was deleted at the service either: no DELETE request since the uninstall began.
    const deletes = (await emulatorRequests(emulator)).slice(requestsBefore).filter((r) => r.method === "DELETE");
    expect(deletes).toEqual([]);
    // And the cluster-scoped RBAC the release made is gone with it.
    const roles = await kubectlJson<List>(["get", "clusterrole", "-l", `app.kubernetes.io/instance=${release}`]);
    expect(roles.items).toEqual([]);
  }, 300_000);
});
