// A real Argo CD (v3.6.1, built from its Go module; application-controller, repo-server and
// redis as pods of the e2e cluster, keyward's health checks from argocd/argocd-cm.yaml) reading
// a git repository served in the cluster by `git daemon`:
// - an Application whose source is charts/keyward installs keyward itself (helm on the
//   repo-server's PATH) and stays Synced;
// - an Application holding every sample of config/samples, in sync waves: each resource's health
//   from keyward's Lua matches its Ready condition (Progressing before keyward runs, Healthy
//   when Ready), and the Application stays Synced, with no new sync, after keyward wrote status
//   and annotations;
// - a sync requested in Git (a later commit setting keyward.dev/sync-requested-at, as
//   docs/argocd.md says) runs once, and the Application stays Synced, with no self-heal sync,
//   while keyward records it handled in handled.keyward.dev/ (which the manifests, like
//   `kubectl keyward export`'s, do not set);
// - a later commit moving every manifest from v1alpha1 (as first committed) to v1beta1 (as
//   config/samples writes them) is in sync as it is (Argo CD applies nothing), and one more
//   adding a label is applied as v1beta1; neither calls the service, and hard refreshes find no
//   diff;
// - an Application with a token the service refuses, its ProviderConfig a v1beta1 manifest: Degraded.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { convert, type ConvertibleObject } from "../../src/resources/conversion.ts";
import { waitForCrdsEstablished } from "../controlplane/crds-established.ts";
import {
  apply,
  context,
  createNamespace,
  deployEmulator,
  emulatorRequests,
  emulatorToken,
  installCrds,
  kubectl,
  kubectlJson,
  keywardObjects,
  ready,
  repoRoot,
  samples,
  waitAllReady,
  waitFor,
  type Emulator,
  type KubeObject,
} from "./support.ts";

const argoNs = "kw-e2e-argocd";
const emulatorNs = "kw-e2e-argo-emulator";
const keywardNs = "kw-e2e-argo-keyward";
const samplesNs = "kw-e2e-argo-samples";
const degradedNs = "kw-e2e-argo-degraded";
const repoUrl = `git://argocd-git.${argoNs}.svc:9418/keyward.git`;

interface ResourceStatus {
  group?: string;
  kind: string;
  name: string;
  namespace?: string;
  status?: string;
  health?: { status?: string; message?: string };
}

interface Application extends KubeObject {
  status?: KubeObject["status"] & {
    sync?: { status?: string; revision?: string };
    health?: { status?: string };
    operationState?: { phase?: string; startedAt?: string; message?: string; syncResult?: { revision?: string } };
    resources?: ResourceStatus[];
  };
}

let emulator: Emulator;
/** The samples as committed under keyward/, by Kind/name: each file's path in the repository and its object. */
const committed = new Map<string, { path: string; doc: KubeObject }>();

async function app(name: string): Promise<Application> {
  return kubectlJson<Application>(["-n", argoNs, "get", "applications.argoproj.io", name]);
}

function summary(a: Application): string {
  const s = a.status;
  return JSON.stringify(
    {
      sync: s?.sync?.status,
      health: s?.health?.status,
      operation: s?.operationState?.phase,
      message: s?.operationState?.message,
      resources: (s?.resources ?? []).map(
        (r) => `${r.kind}/${r.name}: ${r.status ?? "-"} ${r.health?.status ?? "-"} ${r.health?.message ?? ""}`,
      ),
    },
    null,
    1,
  );
}

async function waitApp(name: string, what: string, check: (a: Application) => boolean, timeoutMs = 300_000): Promise<Application> {
  let last: Application | undefined;
  return waitFor(
    `Application ${name}: ${what}`,
    async () => {
      last = await app(name);
      return check(last) ? last : undefined;
    },
    timeoutMs,
    () => Promise.resolve(last ? summary(last) : "no Application"),
  );
}

const settled = (a: Application) =>
  a.status?.sync?.status === "Synced" && a.status.health?.status === "Healthy" && a.status.operationState?.phase === "Succeeded";

async function hardRefresh(name: string): Promise<Application> {
  await kubectl(["-n", argoNs, "annotate", "applications.argoproj.io", name, "argocd.argoproj.io/refresh=hard", "--overwrite"]);
  return waitApp(name, "hard refresh done", (a) => a.metadata.annotations?.["argocd.argoproj.io/refresh"] === undefined, 120_000);
}

function application(
  name: string,
  path: string,
  namespace: string,
  source: Record<string, unknown> = { directory: { recurse: true } },
): unknown {
  return {
    apiVersion: "argoproj.io/v1alpha1",
    kind: "Application",
    metadata: { name, namespace: argoNs },
    spec: {
      project: "default",
      source: { repoURL: repoUrl, targetRevision: "main", path, ...source },
      destination: { server: "https://kubernetes.default.svc", namespace },
      syncPolicy: { automated: { prune: true, selfHeal: true }, syncOptions: ["CreateNamespace=true"] },
    },
  };
}

/** The git repository: keyward/ (every sample, in waves), degraded/ (a refused token), chart/ (the release's chart). */
function gitBundle(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), "keyward-e2e-git-"));
  try {
    const work = join(dir, "work");
    const wave: Record<string, string> = {
      Secret: "0",
      ProviderConfig: "0",
      Project: "1",
      CertificateProfile: "1",
      AccessToken: "1",
      ProjectMembership: "2",
      SecretSync: "2",
    };
    mkdirSync(join(work, "keyward"), { recursive: true });
    mkdirSync(join(work, "degraded"), { recursive: true });
    // In v1alpha1, as a user's Git held them before v1beta1: a later test moves them.
    samples(emulator.baseUrl, "v1alpha1").forEach((doc, i) => {
      const metadata = doc.metadata as KubeObject["metadata"];
      metadata.annotations = { ...metadata.annotations, "argocd.argoproj.io/sync-wave": wave[doc.kind] ?? "3" };
      const path = `keyward/${String(i).padStart(2, "0")}-${doc.kind.toLowerCase()}-${doc.metadata.name}.json`;
      writeFileSync(join(work, path), JSON.stringify(doc, null, 2));
      committed.set(`${doc.kind}/${doc.metadata.name}`, { path, doc });
      if (doc.kind === "Secret" || doc.kind === "ProviderConfig") {
        // The ProviderConfig in v1beta1: an Application that creates its objects in that version.
        const copy = (
          doc.kind === "ProviderConfig" ? convert(doc as unknown as ConvertibleObject, "v1beta1") : JSON.parse(JSON.stringify(doc))
        ) as Record<string, unknown>;
        if (doc.kind === "Secret") copy["stringData"] = { token: "a-token-the-service-refuses" };
        writeFileSync(join(work, "degraded", `${doc.kind.toLowerCase()}.json`), JSON.stringify(copy, null, 2));
      }
    });
    // The release's packaged chart, unpacked, as a platform team commits a vendored chart.
    mkdirSync(join(work, "chart"), { recursive: true });
    execFileSync("tar", ["-xzf", context().keywardChart, "-C", join(work, "chart"), "--strip-components=1"]);
    const git = (...args: string[]) =>
      execFileSync("git", ["-C", work, "-c", "user.name=e2e", "-c", "user.email=e2e@localhost", ...args], { stdio: "pipe" });
    git("init", "-q", "-b", "main");
    git("add", "-A");
    git("commit", "-q", "-m", "keyward's chart and samples");
    git("bundle", "create", join(dir, "repo.bundle"), "main");
    return readFileSync(join(dir, "repo.bundle"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A later commit to the repository the git daemon serves, as a user pushes one: each path of
 * `files` gets its content (sent as a tar archive on stdin). Returns the new revision.
 */
async function commitToGit(files: Record<string, string>, message: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "keyward-e2e-commit-"));
  let archive: Buffer;
  try {
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
    archive = execFileSync("tar", ["-c", "-C", dir, ...Object.keys(files)]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const script = [
    "set -e",
    "rm -rf /tmp/work",
    // -b main: the bare repository cloned from the bundle has no HEAD branch to check out.
    "git clone -q -b main /tmp/repos/keyward.git /tmp/work",
    "tar -x -C /tmp/work",
    "cd /tmp/work",
    `git -c user.name=e2e -c user.email=e2e@localhost commit -q -am ${JSON.stringify(message)}`,
    "git push -q origin main",
    "git rev-parse HEAD",
  ].join("; ");
  const out = await kubectl(["-n", argoNs, "exec", "-i", "deploy/argocd-git", "--", "sh", "-c", script], { input: archive });
  return out.trim().split("\n").pop() ?? "";
}

function deployment(
  name: string,
  command: string[],
  opts: { env?: Record<string, string>; port?: number; volumes?: unknown[]; mounts?: unknown[] } = {},
): unknown[] {
  const labels = { "app.kubernetes.io/name": name };
  const objects: unknown[] = [
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name, namespace: argoNs, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: "argocd",
            containers: [
              {
                name,
                image: context().argocdImage,
                imagePullPolicy: "IfNotPresent",
                command,
                env: Object.entries({ HOME: "/home/argocd", TMPDIR: "/tmp", ...opts.env }).map(([n, value]) => ({ name: n, value })),
                volumeMounts: [{ name: "tmp", mountPath: "/tmp" }, ...(opts.mounts ?? [])],
              },
            ],
            volumes: [{ name: "tmp", emptyDir: {} }, ...(opts.volumes ?? [])],
          },
        },
      },
    },
  ];
  if (opts.port !== undefined) {
    objects.push({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: argoNs, labels },
      spec: { selector: labels, ports: [{ port: opts.port, targetPort: opts.port }] },
    });
  }
  return objects;
}

async function installArgocd(bundle: Buffer): Promise<void> {
  const manifests = context().argocdManifests;
  await kubectl([
    "apply",
    "--server-side",
    "--force-conflicts",
    "-f",
    join(manifests, "application-crd.yaml"),
    "-f",
    join(manifests, "appproject-crd.yaml"),
  ]);
  await waitForCrdsEstablished(kubectl, ["crd/applications.argoproj.io", "crd/appprojects.argoproj.io"]);
  // argocd-cm: the stock one plus keyward's health checks (the wildcard form), as a user installs them.
  await kubectl([
    "-n",
    argoNs,
    "apply",
    "-f",
    join(manifests, "argocd-secret.yaml"),
    "-f",
    join(manifests, "argocd-rbac-cm.yaml"),
    "-f",
    join(repoRoot, "argocd", "argocd-cm.yaml"),
  ]);
  await apply(
    [
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "argocd-git-bundle", namespace: argoNs },
        binaryData: { "repo.bundle": bundle.toString("base64") },
      },
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "argocd", namespace: argoNs } },
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "kw-e2e-argocd" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
        subjects: [{ kind: "ServiceAccount", name: "argocd", namespace: argoNs }],
      },
      // argocd-server creates AppProject default on start; it does not run here.
      {
        apiVersion: "argoproj.io/v1alpha1",
        kind: "AppProject",
        metadata: { name: "default", namespace: argoNs },
        spec: {
          sourceRepos: ["*"],
          destinations: [{ namespace: "*", server: "*" }],
          clusterResourceWhitelist: [{ group: "*", kind: "*" }],
        },
      },
      ...deployment(
        "argocd-git",
        [
          "sh",
          "-c",
          "git clone -q --bare /bundle/repo.bundle /tmp/repos/keyward.git && exec git daemon --reuseaddr --listen=0.0.0.0 --port=9418 --base-path=/tmp/repos --export-all",
        ],
        {
          port: 9418,
          volumes: [{ name: "bundle", configMap: { name: "argocd-git-bundle" } }],
          mounts: [{ name: "bundle", mountPath: "/bundle" }],
        },
      ),
      ...deployment(
        "argocd-redis",
        [
          "redis-server",
          "--bind",
          "0.0.0.0",
          "--port",
          "6379",
          "--save",
          "",
          "--appendonly",
          "no",
          "--protected-mode",
          "no",
          "--dir",
          "/tmp",
        ],
        { port: 6379 },
      ),
      ...deployment(
        "argocd-repo-server",
        // v3.6: --disable-tls also needs --client-ca-path "" (the flag has a default).
        [
          "argocd-repo-server",
          "--port",
          "8081",
          "--redis",
          "argocd-redis:6379",
          "--disable-tls",
          "--client-ca-path",
          "",
          "--logformat",
          "text",
        ],
        {
          port: 8081,
          env: {
            ARGOCD_GPG_ENABLED: "false",
            ARGOCD_TLS_DATA_PATH: "/tmp/tls",
            ARGOCD_SSH_DATA_PATH: "/tmp/ssh",
            ARGOCD_GNUPGHOME: "/tmp/gpg",
          },
        },
      ),
      // --persist-resource-health: v3 keeps per-resource health only in redis otherwise.
      ...deployment("argocd-application-controller", [
        "argocd-application-controller",
        "--namespace",
        argoNs,
        "--repo-server",
        "argocd-repo-server:8081",
        "--repo-server-plaintext",
        "--redis",
        "argocd-redis:6379",
        "--persist-resource-health=true",
        "--logformat",
        "text",
      ]),
    ],
    argoNs,
  );
  for (const name of ["argocd-git", "argocd-redis", "argocd-repo-server", "argocd-application-controller"]) {
    await kubectl(["-n", argoNs, "rollout", "status", `deployment/${name}`, "--timeout=300s"]);
  }
}

describe("a real Argo CD managing keyward and its resources", () => {
  beforeAll(async () => {
    // keyward's CRDs exist before Argo CD starts, as in a cluster where keyward is installed:
    // Argo CD can then discover keyward.dev/v1alpha1 when it syncs the samples, whichever file
    // ran before this one (on a fresh cluster none had installed them).
    await installCrds();
    await createNamespace(argoNs);
    emulator = await deployEmulator(await createNamespace(emulatorNs));
    await installArgocd(gitBundle());
  }, 900_000);

  afterAll(async () => {
    // Argo CD deletes nothing here (no resources-finalizer): removing the Applications leaves
    // keyward running until the namespaces go; the chart's own release is removed with them.
    await kubectl(["-n", argoNs, "delete", "applications.argoproj.io", "--all", "--wait=true", "--timeout=120s"], { allowFailure: true });
    await kubectl(["-n", keywardNs, "delete", "deployment", "--all", "--wait=true", "--timeout=120s"], { allowFailure: true });
    await kubectl(["delete", "clusterrole,clusterrolebinding", "-l", "app.kubernetes.io/instance=kw-argo", "--wait=true"], {
      allowFailure: true,
    });
  }, 300_000);

  test("before keyward runs, the samples Application waits on its first wave: the ProviderConfig is Progressing", async () => {
    await apply([application("keyward-samples", "keyward", samplesNs)], argoNs);
    const a = await waitApp(
      "keyward-samples",
      "the ProviderConfig Progressing and the sync waiting",
      (x) =>
        x.status?.operationState?.phase === "Running" &&
        (x.status.resources ?? []).some((r) => r.kind === "ProviderConfig" && r.health?.status === "Progressing"),
    );
    const provider = a.status?.resources?.find((r) => r.kind === "ProviderConfig");
    expect(provider?.health?.message).toBe("Waiting for keyward to reconcile");
    // Wave 1 has not been applied: the Project does not exist yet.
    const projects = await kubectlJson<{ items: unknown[] }>(["-n", samplesNs, "get", "projects.v1alpha1.keyward.dev"]);
    expect(projects.items).toEqual([]);
  }, 400_000);

  test("an Application whose source is the release's chart installs keyward and stays Synced", async () => {
    // The chart's own ProviderConfig (providerConfig.create) is a keyward resource in the same
    // Application as the CRDs: Argo CD must apply the CRDs first. Its token Secret exists already.
    await createNamespace(keywardNs);
    await apply(
      [
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: {
            name: "keyward-token",
            labels: { "keyward.dev/credentials": "true" },
            annotations: { "keyward.dev/allowed-base-urls": emulator.baseUrl },
          },
          stringData: { token: emulatorToken },
        },
      ],
      keywardNs,
    );
    await apply(
      [
        application("keyward", "chart", keywardNs, {
          helm: {
            releaseName: "kw-argo",
            parameters: [
              { name: "providerConfig.create", value: "true" },
              { name: "providerConfig.baseUrl", value: emulator.baseUrl },
              { name: "providerConfig.secretName", value: "keyward-token" },
            ],
          },
        }),
      ],
      argoNs,
    );
    const a = await waitApp("keyward", "Synced and Healthy", settled, 600_000);
    const kinds = new Set((a.status?.resources ?? []).map((r) => r.kind));
    for (const kind of ["CustomResourceDefinition", "Deployment", "ServiceAccount", "ClusterRole", "Service", "ProviderConfig"])
      expect(kinds, kind).toContain(kind);
    // keyward, installed by this Application, reconciles the Application's own ProviderConfig.
    const provider = a.status?.resources?.find((r) => r.kind === "ProviderConfig");
    expect(provider?.health?.status).toBe("Healthy");
    expect(
      ready(await kubectlJson(["-n", keywardNs, "get", "providerconfigs.v1alpha1.keyward.dev", provider?.name ?? "default"]))?.status,
    ).toBe("True");
    expect((a.status?.resources ?? []).filter((r) => r.status !== "Synced").map((r) => `${r.kind}/${r.name}`)).toEqual([]);
    await kubectl(["-n", keywardNs, "rollout", "status", "deployment/kw-argo-keyward", "--timeout=300s"]);
    // No diff from the chart's own objects (defaulted Deployment fields, the CRDs' status): a
    // hard refresh compares again and finds nothing.
    const refreshed = await hardRefresh("keyward");
    expect(refreshed.status?.sync?.status, summary(refreshed)).toBe("Synced");
  }, 900_000);

  test("each sample's health from keyward's Lua matches its Ready condition, and the Application ends Synced and Healthy", async () => {
    const a = await waitApp("keyward-samples", "Synced and Healthy", settled, 600_000);
    const objects = await kubectlJson<{ items: KubeObject[] }>([
      "-n",
      samplesNs,
      "get",
      "providerconfigs.keyward.dev,projects.keyward.dev,projectmemberships.keyward.dev,secretsyncs.keyward.dev,accesstokens.keyward.dev,certificateprofiles.keyward.dev",
    ]);
    const keywardResources = (a.status?.resources ?? []).filter((r) => r.group === "keyward.dev");
    expect(keywardResources.length).toBe(objects.items.length);
    expect(new Set(keywardResources.map((r) => r.kind)).size).toBe(6);
    for (const r of keywardResources) {
      const obj = objects.items.find((o) => o.kind === r.kind && o.metadata.name === r.name);
      expect(ready(obj ?? ({} as KubeObject))?.status, `${r.kind}/${r.name}`).toBe("True");
      expect(r.health?.status, `${r.kind}/${r.name}`).toBe("Healthy");
      const condition = ready(obj ?? ({} as KubeObject));
      expect(r.health?.message, `${r.kind}/${r.name}`).toBe(
        condition?.message ? `${condition.reason ?? ""}: ${condition.message}` : condition?.reason,
      );
    }
  }, 700_000);

  test("keyward's status and annotations cause no diff: hard refreshes keep it Synced and start no sync", async () => {
    // Right after the first sync Argo CD may run one more partial self-heal sync (for any
    // Application): wait until the last operation is over, then nothing new may start.
    const before = await waitApp("keyward-samples", "settled", settled);
    const startedAt = before.status?.operationState?.startedAt;
    // What keyward wrote into objects Argo CD manages: status and its annotation on the Project,
    // its finalizer on the token Secret (marked as credentials by the user; keyward adds no label).
    const project = await kubectlJson(["-n", samplesNs, "get", "projects.v1alpha1.keyward.dev", "payments"]);
    expect(Object.keys(project.metadata.annotations ?? {})).toContain("keyward.dev/create-started");
    expect(project.status?.conditions?.length).toBeGreaterThan(0);
    const secret = await kubectlJson(["-n", samplesNs, "get", "secret", "keyward-token"]);
    expect(secret.metadata.finalizers).toContain("keyward.dev/in-use");
    expect(secret.metadata.labels?.["keyward.dev/credentials"]).toBe("true");
    expect(secret.metadata.labels?.["keyward.dev/provider-config"]).toBeUndefined();
    for (let i = 0; i < 2; i++) {
      const after = await hardRefresh("keyward-samples");
      expect(after.status?.sync?.status, summary(after)).toBe("Synced");
      expect((after.status?.resources ?? []).filter((r) => r.status !== "Synced").map((r) => `${r.kind}/${r.name}`)).toEqual([]);
      expect(after.status?.operationState?.startedAt).toBe(startedAt);
    }
  }, 400_000);

  test("a sync requested in Git runs once, and the Application stays Synced while keyward records it handled", async () => {
    const name = "payments-app-platform";
    const file = committed.get(`SecretSync/${name}`);
    if (!file) throw new Error(`no SecretSync/${name} among the samples`);
    await waitApp("keyward-samples", "settled", settled);
    const mark = Math.max(0, ...(await emulatorRequests(emulator)).map((r) => r.seq));
    // What the user commits: the manifest with a request value, a time (docs/argocd.md).
    const value = new Date().toISOString();
    const requested = {
      ...file.doc,
      metadata: { ...file.doc.metadata, annotations: { ...file.doc.metadata.annotations, "keyward.dev/sync-requested-at": value } },
    };
    expect(Object.keys(requested.metadata.annotations).filter((k) => k.startsWith("handled.keyward.dev/"))).toEqual([]);
    const revision = await commitToGit({ [file.path]: JSON.stringify(requested, null, 2) }, "request a sync of payments-app-platform");
    committed.set(`SecretSync/${name}`, { path: file.path, doc: requested });
    await hardRefresh("keyward-samples");

    // Argo CD applies the commit; keyward runs the sync and writes its record into the object.
    const handled = await waitFor(
      `SecretSync ${name}: ${value} handled`,
      async () => {
        const o = await kubectlJson(["-n", samplesNs, "get", "secretsyncs.v1alpha1.keyward.dev", name]);
        return o.status?.["lastHandledSyncRequest"] === value && o.metadata.annotations?.["handled.keyward.dev/sync-requested-at"] === value
          ? o
          : undefined;
      },
      300_000,
    );
    const applied = await waitApp(
      "keyward-samples",
      `revision ${revision} applied and settled`,
      (a) => settled(a) && a.status?.sync?.revision === revision,
    );
    const startedAt = applied.status?.operationState?.startedAt;
    // keyward's write is not a diff: hard refreshes compare again, find none, and start no sync
    // (self-heal would start one, and put Git's value back, on any difference).
    for (let i = 0; i < 2; i++) {
      const after = await hardRefresh("keyward-samples");
      expect(after.status?.sync?.status, summary(after)).toBe("Synced");
      expect((after.status?.resources ?? []).filter((r) => r.status !== "Synced").map((r) => `${r.kind}/${r.name}`)).toEqual([]);
      expect(after.status?.operationState?.startedAt).toBe(startedAt);
    }
    const live = await kubectlJson(["-n", samplesNs, "get", "secretsyncs.v1alpha1.keyward.dev", name]);
    expect(live.metadata.annotations?.["handled.keyward.dev/sync-requested-at"]).toBe(value);
    // One sync-secrets call for the value, none again.
    const syncId = handled.status?.["syncId"];
    if (typeof syncId !== "string") throw new Error(`SecretSync ${name} has no syncId`);
    const triggers = (await emulatorRequests(emulator)).filter(
      (r) => r.seq > mark && r.operation === "triggerSecretSync" && r.path.includes(syncId) && r.status < 400,
    );
    expect(triggers.map((r) => r.path)).toHaveLength(1);
  }, 900_000);

  test("manifests moved to v1beta1 are in sync as they are, and applied as v1beta1 with a change, with no call to the service", async () => {
    const settledBefore = await waitApp("keyward-samples", "settled", settled);
    const mark = Math.max(0, ...(await emulatorRequests(emulator)).map((r) => r.seq));
    const before = new Map((await keywardObjects(samplesNs)).map((o) => [`${o.kind}/${o.metadata.name}`, o]));
    // config/samples as written (v1beta1), with what this repository adds: the base URL, the
    // waves and the sync request committed above. The same objects as the v1alpha1 manifests.
    const moved = (labels: Record<string, string>): Record<string, string> => {
      const files: Record<string, string> = {};
      for (const doc of samples(emulator.baseUrl, "v1beta1").filter((d) => d.apiVersion === "keyward.dev/v1beta1")) {
        const key = `${doc.kind}/${doc.metadata.name}`;
        const old = committed.get(key);
        if (!old) throw new Error(`${key} was not committed`);
        const beta = { ...doc, metadata: { ...doc.metadata, annotations: old.doc.metadata.annotations } } as unknown as KubeObject;
        if (Object.keys(labels).length === 0) expect(beta, key).toEqual(convert(old.doc as unknown as ConvertibleObject, "v1beta1"));
        else beta.metadata.labels = { ...beta.metadata.labels, ...labels };
        files[old.path] = JSON.stringify(beta, null, 2);
        committed.set(key, { path: old.path, doc: beta });
      }
      expect(Object.keys(files)).toHaveLength(before.size);
      return files;
    };
    const noDiff = async (startedAt: string | undefined): Promise<void> => {
      for (let i = 0; i < 2; i++) {
        const after = await hardRefresh("keyward-samples");
        expect(after.status?.sync?.status, summary(after)).toBe("Synced");
        expect((after.status?.resources ?? []).filter((r) => r.status !== "Synced").map((r) => `${r.kind}/${r.name}`)).toEqual([]);
        expect(after.status?.operationState?.startedAt).toBe(startedAt);
      }
    };

    // The same objects in v1beta1: Argo CD compares them with the live ones and finds nothing to apply.
    const same = await commitToGit(moved({}), "keyward's manifests in v1beta1");
    await hardRefresh("keyward-samples");
    const compared = await waitApp("keyward-samples", `revision ${same} compared`, (a) => settled(a) && a.status?.sync?.revision === same);
    expect(compared.status?.operationState?.startedAt).toBe(settledBefore.status?.operationState?.startedAt);
    await noDiff(settledBefore.status?.operationState?.startedAt);

    // A change in v1beta1 manifests (a label on each): Argo CD applies every object as v1beta1.
    const labelled = await commitToGit(moved({ "example.com/api": "v1beta1" }), "label keyward's manifests");
    await hardRefresh("keyward-samples");
    const applied = await waitApp(
      "keyward-samples",
      `revision ${labelled} applied and settled`,
      (a) => settled(a) && a.status?.sync?.revision === labelled && a.status.operationState?.syncResult?.revision === labelled,
    );
    await noDiff(applied.status?.operationState?.startedAt);
    const after = await waitAllReady(samplesNs, before.size, 300_000);
    for (const o of after) {
      const key = `${o.kind}/${o.metadata.name}`;
      const lastApplied = o.metadata.annotations?.["kubectl.kubernetes.io/last-applied-configuration"] ?? "{}";
      expect((JSON.parse(lastApplied) as { apiVersion?: string }).apiVersion, key).toBe("keyward.dev/v1beta1");
      expect(o.metadata.labels?.["example.com/api"], key).toBe("v1beta1");
      expect(o.metadata.uid, key).toBe(before.get(key)?.metadata.uid);
      for (const id of ["projectId", "syncId", "membershipId", "profileId"])
        expect(o.status?.[id], `${key} ${id}`).toEqual(before.get(key)?.status?.[id]);
    }
    // Nothing written at the service but the short-lived token's renewals (reads, some of them
    // POSTs such as getMembershipDetails, aside).
    const writes = (await emulatorRequests(emulator)).filter(
      (r) => r.seq > mark && r.status < 400 && !/^(get|list)/.test(r.operation) && !/token|login/i.test(r.operation),
    );
    expect(writes.map((r) => `${r.method} ${r.path} (${r.operation})`)).toEqual([]);
  }, 900_000);

  test("a ProviderConfig whose token the service refuses is Degraded", async () => {
    await apply([application("keyward-degraded", "degraded", degradedNs)], argoNs);
    const a = await waitApp("keyward-degraded", "the ProviderConfig Degraded", (x) =>
      (x.status?.resources ?? []).some((r) => r.kind === "ProviderConfig" && r.health?.status === "Degraded"),
    );
    const provider = await kubectlJson(["-n", degradedNs, "get", "providerconfigs.v1alpha1.keyward.dev", "default"]);
    // Created by Argo CD from a v1beta1 manifest.
    const lastApplied = provider.metadata.annotations?.["kubectl.kubernetes.io/last-applied-configuration"] ?? "{}";
    expect((JSON.parse(lastApplied) as { apiVersion?: string }).apiVersion).toBe("keyward.dev/v1beta1");
    const condition = ready(provider);
    expect(condition?.status).toBe("False");
    expect(a.status?.resources?.find((r) => r.kind === "ProviderConfig")?.health?.message).toContain(condition?.reason ?? "no reason");
    expect(a.status?.health?.status).toBe("Degraded");
  }, 400_000);
});
