// The soak's kind site: keyward as users run it — the release's packaged chart, its image loaded
// into a kind cluster (hack/e2e/up.sh builds both, no registry) — and the emulator in the same
// cluster (the e2e's emulator image), its admin API reached through a NodePort on the kind node.
// Faults that fit a cluster: keyward pods force-deleted or their process SIGKILLed in the
// container (the kubelet restarts it), pods evicted through the Eviction API (the chart's
// PodDisruptionBudget may refuse), the leader among them, and the kube-apiserver's container
// killed on the node (the kubelet restarts the static pod; every watch ends with it). Health is
// read on the node: the keyward process's RSS from /proc and its /metrics on 127.0.0.1 inside the
// pod's network namespace, with a token of a ServiceAccount the chart binds to its metrics reader role.
import { execFile, spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { repoRoot } from "../../test/controlplane/binaries.ts";
import { waitForCrdsEstablished } from "../../test/controlplane/crds-established.ts";
import { emulatorManifests, emulatorServiceUrl } from "../../test/emulator/manifests.ts";
import type { RecordedRequest } from "../../test/emulator/types.ts";
import type { ServiceState } from "./judge.ts";
import type { KeywardConfig, KeywardSample, ServiceAdmin, Site } from "./site.ts";

const execFileAsync = promisify(execFile);

/** What the kind site needs of hack/e2e/up.sh (test/e2e/global-setup.ts reads the same lines). */
export interface KindContext {
  kubeconfig: string;
  kubectl: string;
  helm: string;
  /** The release's packaged chart; its default image is loaded in the cluster. */
  chart: string;
  emulatorImage: string;
  /** The kind cluster's name: its node container is `<cluster>-control-plane`. */
  cluster: string;
}

export const clusterName = (): string => process.env["KEYWARD_E2E_CLUSTER"] ?? "keyward-e2e";

export interface UpValues {
  /** The value up.sh printed for `key`; throws when it printed none. */
  get: (key: string) => string;
  has: (key: string) => boolean;
}

/**
 * Runs hack/e2e/up.sh (builds or reuses the cluster, the release and the images) and reads its
 * KEY=VALUE lines. A cold run builds for minutes (about 8 on 2 cores); one that passes
 * `deadlineMs` is stopped and fails by name, instead of holding the e2e until CI's own limit.
 */
export async function upScript(deadlineMs = 40 * 60_000): Promise<UpValues> {
  const out = await new Promise<string>((resolvePromise, reject) => {
    const child = spawn("bash", [join(repoRoot, "hack", "e2e", "up.sh")], { cwd: repoRoot, stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    const timer = setTimeout(() => {
      child.kill("SIGTERM");
      reject(new Error(`hack/e2e/up.sh did not finish within ${deadlineMs / 60_000} minutes: stopped`));
    }, deadlineMs);
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolvePromise(stdout);
      else reject(new Error(`hack/e2e/up.sh exited with ${code}`));
    });
  });
  const values = new Map<string, string>();
  for (const line of out.split("\n")) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m?.[1] !== undefined && m[2] !== undefined) values.set(m[1], m[2]);
  }
  return {
    get: (key) => {
      const value = values.get(key);
      if (value === undefined || value === "") throw new Error(`hack/e2e/up.sh printed no ${key}`);
      return value;
    },
    has: (key) => values.has(key),
  };
}

export async function kindContextFromUp(): Promise<KindContext> {
  const { get } = await upScript();
  return {
    kubeconfig: get("KUBECONFIG"),
    kubectl: get("KUBECTL"),
    helm: get("HELM"),
    chart: get("KEYWARD_CHART"),
    emulatorImage: get("EMULATOR_IMAGE"),
    cluster: clusterName(),
  };
}

// The soak's own namespaces on the cluster (removed before and after a run): soak-NN,
// soak-credentials (workload.ts's and soak.ts's), and these two.
const KEYWARD_NAMESPACE = "soak-keyward";
const EMULATOR_NAMESPACE = "soak-emulator";
const RELEASE = "keyward";
const EMULATOR_URL = emulatorServiceUrl(EMULATOR_NAMESPACE);
const METRICS_READER = "soak-metrics-reader";
const TOKEN_FILE = "/tmp/keyward-soak-metrics-token";
const soakNamespace = (name: string): boolean => name.startsWith("soak-");

export interface KindSiteOptions {
  context: KindContext;
  log: (line: string) => void;
}

export function kindSite(options: KindSiteOptions): Site {
  const { context, log } = options;
  const docker = existsSync("/usr/bin/docker") ? "/usr/bin/docker" : "docker";
  const node = `${context.cluster}-control-plane`;
  const kc = new KubeConfig();
  kc.loadFromFile(context.kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const run = execFileAsync(context.kubectl, ["--kubeconfig", context.kubeconfig, ...args], { maxBuffer: 256 * 1024 * 1024 });
    if (input !== undefined) run.child.stdin?.end(input);
    return (await run).stdout;
  };
  const helm = async (args: string[]): Promise<string> =>
    (await execFileAsync(context.helm, [...args, "--kubeconfig", context.kubeconfig], { maxBuffer: 64 * 1024 * 1024 })).stdout;
  /** A bash script on the kind node (crictl, nsenter and curl are there; the apiserver need not answer). */
  const onNode = async (script: string): Promise<string> =>
    (await execFileAsync(docker, ["exec", node, "bash", "-c", script], { maxBuffer: 64 * 1024 * 1024 })).stdout;
  /** SIGKILLs in a container, by pod: the kubelet counts them among the pod's restarts. */
  const containerKills = new Map<string, number>();

  const clean = async (): Promise<void> => {
    // keyward first (none may reconcile while its namespaces go), then its finalizers, then the namespaces.
    await helm(["uninstall", RELEASE, "-n", KEYWARD_NAMESPACE, "--wait", "--ignore-not-found"]).catch(() => "");
    const namespaces = (await kubectl(["get", "namespaces", "-o", "name"]))
      .split("\n")
      .map((line) => line.replace(/^namespace\//, ""))
      .filter(soakNamespace);
    const kinds =
      "secrets,projects.keyward.dev,projectmemberships.keyward.dev,secretsyncs.keyward.dev,accesstokens.keyward.dev,certificateprofiles.keyward.dev,providerconfigs.keyward.dev";
    for (const ns of namespaces) {
      const names = (await kubectl(["get", kinds, "-n", ns, "-o", "name"]).catch(() => "")).split("\n").filter(Boolean);
      await Promise.all(
        names.map((name) =>
          kubectl(["patch", "-n", ns, name, "--type", "merge", "-p", '{"metadata":{"finalizers":null}}']).catch(() => ""),
        ),
      );
    }
    for (const name of (await kubectl(["get", "clusterproviderconfigs.keyward.dev", "-o", "name"]).catch(() => "")).split("\n")) {
      if (!name.includes("/soak-")) continue;
      await kubectl(["patch", name, "--type", "merge", "-p", '{"metadata":{"finalizers":null}}']).catch(() => "");
      await kubectl(["delete", name, "--ignore-not-found"]).catch(() => "");
    }
    if (namespaces.length > 0) await kubectl(["delete", "namespace", ...namespaces, "--wait=true", "--timeout=300s"]);
  };

  const keywardPods = async (): Promise<{ name: string; restarts: number }[]> => {
    // The operator's pods only: the release's conversion webhook pods share its instance label.
    const pods = await core.listNamespacedPod({
      namespace: KEYWARD_NAMESPACE,
      labelSelector: `app.kubernetes.io/name=keyward,app.kubernetes.io/instance=${RELEASE}`,
    });
    return pods.items
      .filter((p) => p.metadata?.deletionTimestamp === undefined && p.status?.phase === "Running")
      .map((p) => ({
        name: p.metadata?.name ?? "",
        restarts: (p.status?.containerStatuses ?? []).reduce((sum, c) => sum + c.restartCount, 0),
      }));
  };

  return {
    on: "kind",
    kubeconfigPath: context.kubeconfig,
    kubectl: context.kubectl,
    leaderLease: { namespace: KEYWARD_NAMESPACE, name: `${RELEASE}-leader` },
    async open(tokens): Promise<ServiceAdmin> {
      await clean();
      const dir = join(repoRoot, "crds");
      const files = readdirSync(dir)
        .filter((name) => name.endsWith(".yaml") && !name.startsWith("kustomization"))
        .map((f) => `crd/${f.slice(0, -".yaml".length)}`);
      await kubectl(["apply", "--server-side", "--force-conflicts", "-f", dir]);
      await waitForCrdsEstablished(kubectl, files);

      const objects = [
        { apiVersion: "v1", kind: "Namespace", metadata: { name: EMULATOR_NAMESPACE } },
        // The tokens the service accepts: keyward's credential Secrets hold them too.
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "emulator-tokens", namespace: EMULATOR_NAMESPACE },
          stringData: { tokens: tokens.join(",") },
        },
        ...emulatorManifests({
          namespace: EMULATOR_NAMESPACE,
          image: context.emulatorImage,
          // As the local site's in-process emulator: no rate limit of its own (the faults bring 429s), jobs of 200 ms.
          args: ["--no-rate-limit", "--job-delay-ms", "200"],
          env: [{ name: "EMULATOR_TOKENS", valueFrom: { secretKeyRef: { name: "emulator-tokens", key: "tokens" } } }],
          // The soak reaches the admin API on the node's address, also while the apiserver restarts.
          serviceType: "NodePort",
        }),
      ];
      await kubectl(
        ["apply", "--server-side", "--force-conflicts", "-f", "-"],
        JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }),
      );
      await kubectl(["-n", EMULATOR_NAMESPACE, "rollout", "status", "deployment/emulator", "--timeout=180s"]);
      const nodePort = (
        await kubectl(["-n", EMULATOR_NAMESPACE, "get", "service", "emulator", "-o", "jsonpath={.spec.ports[0].nodePort}"])
      ).trim();
      const nodeIp = (
        await execFileAsync(docker, ["inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", node])
      ).stdout.trim();
      const admin = `http://${nodeIp}:${nodePort}/_emulator`;
      const once = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
        const response = await fetch(`${admin}${path}`, {
          method,
          ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
          signal: AbortSignal.timeout(30_000),
        });
        if (!response.ok) throw new Error(`emulator admin ${method} ${path}: ${response.status}`);
        return (await response.json()) as T;
      };
      // GET and PUT are tried again when the node's port does not answer (a busy node): a fault
      // left on past its window would shape the quiet tail. DELETE (the log's take) and POST are
      // not: done twice they would lose calls or seed twice.
      const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
        for (let attempt = 1; ; attempt++) {
          try {
            return await once<T>(method, path, body);
          } catch (error) {
            if ((method !== "GET" && method !== "PUT") || attempt >= 5) throw error;
            await sleep(2_000);
          }
        }
      };
      for (let i = 0; ; i++) {
        const ok = await call("GET", "/healthz").then(
          () => true,
          () => false,
        );
        if (ok) break;
        if (i > 60) throw new Error(`the emulator's admin API does not answer at ${admin}`);
        await sleep(1_000);
      }
      log(`emulator in the cluster (${context.emulatorImage}), its admin API at ${admin}`);
      return {
        url: EMULATOR_URL,
        takeRequests: async () => (await call<{ requests: RecordedRequest[] }>("DELETE", "/requests")).requests,
        setFaults: async (faults) => {
          await call("PUT", "/faults", faults);
        },
        seed: async (seed) => {
          await call("POST", "/seed", seed);
        },
        state: () => call<ServiceState>("GET", "/state"),
      };
    },
    async startKeyward(config: KeywardConfig): Promise<void> {
      const sharded = config.replicas > 1;
      // /metrics asks for a token the apiserver accepts (the chart's default metrics.auth): the
      // soak's reader's, kept on the node for the sampling script, never on a command line.
      await kubectl(["create", "namespace", KEYWARD_NAMESPACE]);
      await kubectl(["-n", KEYWARD_NAMESPACE, "create", "serviceaccount", METRICS_READER]);
      const token = (await kubectl(["-n", KEYWARD_NAMESPACE, "create", "token", METRICS_READER, "--duration", "24h"])).trim();
      const write = execFileAsync(docker, ["exec", "-i", node, "bash", "-c", `umask 077 && cat > ${TOKEN_FILE}`]);
      write.child.stdin?.end(token);
      await write;
      await helm([
        "install",
        RELEASE,
        context.chart,
        "-n",
        KEYWARD_NAMESPACE,
        "--create-namespace",
        "--wait",
        "--timeout",
        "5m",
        // The CRDs outlive a release (crds.keep): this one takes them over.
        "--take-ownership",
        "--set",
        `replicas=${config.replicas}`,
        "--set",
        `sharding.enabled=${sharded}`,
        // Cluster-wide, as ClusterProviderConfigs need; the soak's reader of /metrics bound to the chart's metrics-reader role.
        "--set-json",
        `metrics.readers=${JSON.stringify([{ kind: "ServiceAccount", name: METRICS_READER, namespace: KEYWARD_NAMESPACE }])}`,
        "--set-json",
        `allowedBaseUrls=${JSON.stringify([EMULATOR_URL])}`,
        "--set",
        `clusterProviderConfig.enabled=${config.clusterProviderConfigs}`,
        "--set",
        `clusterProviderConfig.credentialsNamespace=${config.credentialsNamespace}`,
        // As the local site: a resync a minute, so drift and lost answers are found within the run.
        "--set",
        "resyncInterval=60s",
      ]);
      log(`keyward installed from ${context.chart}: ${config.replicas} replica(s) in ${KEYWARD_NAMESPACE}`);
    },
    killable: async () => (await keywardPods().catch(() => [])).map((p) => p.name),
    async kill(identity, random): Promise<string> {
      if (random.chance(0.5)) {
        await kubectl(["-n", KEYWARD_NAMESPACE, "delete", "pod", identity, "--grace-period=0", "--force", "--wait=false"]);
        return `pod ${identity} force-deleted`;
      }
      await onNode(
        `id=$(crictl ps -q --name '^keyward$' --label io.kubernetes.pod.name=${identity} --label io.kubernetes.pod.namespace=${KEYWARD_NAMESPACE}); ` +
          `[ -n "$id" ] && kill -9 "$(crictl inspect -o go-template --template '{{.info.pid}}' "$id")"`,
      );
      containerKills.set(identity, (containerKills.get(identity) ?? 0) + 1);
      return `SIGKILL in ${identity}'s container`;
    },
    async restartApiserver(): Promise<void> {
      const apiserver = "crictl ps -q --name '^kube-apiserver$'";
      const before = (await onNode(apiserver)).trim();
      await onNode(`kill -9 "$(crictl inspect -o go-template --template '{{.info.pid}}' ${before})"`);
      // The kubelet starts a new container (after its crash backoff), then it must answer.
      const deadline = Date.now() + 300_000;
      for (;;) {
        const now = (await onNode(apiserver).catch(() => "")).trim();
        const ready =
          now !== "" &&
          now !== before &&
          (await kubectl(["get", "--raw", "/readyz"]).then(
            (out) => out.trim() === "ok",
            () => false,
          ));
        if (ready) return;
        if (Date.now() > deadline) throw new Error("the kube-apiserver did not come back within 5 minutes");
        await sleep(1_000);
      }
    },
    async sample(): Promise<KeywardSample[]> {
      const text = await onNode(
        `for id in $(crictl ps -q --name '^keyward$' --label io.kubernetes.pod.namespace=${KEYWARD_NAMESPACE}); do ` +
          `pid=$(crictl inspect -o go-template --template '{{.info.pid}}' "$id") || continue; ` +
          `pod=$(crictl inspect -o go-template --template '{{index .status.labels "io.kubernetes.pod.name"}}' "$id") || continue; ` +
          `echo "=== $pod $pid $(awk '/^VmRSS/{print $2}' /proc/$pid/status)"; ` +
          `nsenter -t "$pid" -n curl -sf -m 5 -H "Authorization: Bearer $(cat ${TOKEN_FILE})" http://127.0.0.1:8080/metrics || true; done`,
      );
      return parseNodeSamples(text);
    },
    async selfExits(): Promise<number> {
      const pods = await keywardPods().catch(() => []);
      return pods.reduce((sum, p) => sum + Math.max(0, p.restarts - (containerKills.get(p.name) ?? 0)), 0);
    },
    async evict(random) {
      const pods = await keywardPods().catch(() => []);
      if (pods.length === 0) return undefined;
      const identity = random.pick(pods).name;
      try {
        await core.createNamespacedPodEviction({
          name: identity,
          namespace: KEYWARD_NAMESPACE,
          body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: identity, namespace: KEYWARD_NAMESPACE } },
        });
        return { identity, evicted: true };
      } catch (error) {
        // 429: the PodDisruptionBudget allows no disruption now.
        if ((error as { code?: number }).code === 429) return { identity, evicted: false };
        throw error;
      }
    },
    async close(): Promise<void> {
      await clean().catch((error: unknown) => log(`cleaning the soak's namespaces up failed: ${String(error)}`));
    },
  };
}

/** The node script's output: a `=== <pod> <pid> <VmRSS kB>` line, then that process's /metrics text. */
export function parseNodeSamples(text: string): KeywardSample[] {
  const out: KeywardSample[] = [];
  for (const block of text.split(/^=== /m).slice(1)) {
    const newline = block.indexOf("\n");
    const [identity, pid, rssKb] = (newline === -1 ? block : block.slice(0, newline)).trim().split(/\s+/);
    const metrics = newline === -1 ? "" : block.slice(newline + 1);
    if (!identity || !Number(pid) || !Number(rssKb) || metrics.trim() === "") continue;
    out.push({ identity, pid: Number(pid), rssBytes: Number(rssKb) * 1024, metrics });
  }
  return out;
}
