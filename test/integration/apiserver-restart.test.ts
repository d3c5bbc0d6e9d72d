// kube-apiserver restarted under a running keyward: keyward recovers by itself.
//
// This file runs a control plane of its own (the shared one of global-setup must stay up for
// the other files), stops its kube-apiserver while keyward runs in-process, lets keyward's
// informers and reconciles fail against the closed port, starts the apiserver again on the same
// port, certificates and etcd, and then checks that keyward sees new objects and spec changes
// again, without a restart of keyward and without repeating what it had already done.
import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { startEmulator, type Emulator } from "../emulator/server.ts";
import { ensureBinaries, repoRoot } from "../controlplane/binaries.ts";
import { startControlPlane, type ControlPlane } from "../controlplane/controlplane.ts";
import { waitFor } from "../controlplane/testenv.ts";
import {
  condition,
  projectObject as project,
  createCustom,
  getCustom,
  installProvider,
  isReady,
  mergePatchCustom,
  startKeyward,
  type RunningKeyward,
} from "./support/keyward.ts";
import type { KubeObject } from "../../src/engine/types.ts";
import { waitForCrdsEstablished } from "../controlplane/crds-established.ts";
import { storageVersionCrdDir } from "../controlplane/crds-without-webhook.ts";

const execFileAsync = promisify(execFile);
const TOKEN = "kw-test-apiserver-restart-token-51c2e8";
const namespace = "apiserver-restart";

// Restarting an apiserver needs one of our own; an existing cluster (KEYWARD_E2E_KUBECONFIG) gives none.
const existingCluster = Boolean(process.env.KEYWARD_E2E_KUBECONFIG);

/** kubectl apply of crds/ (in their storage version: no webhook runs here) against `plane`, then wait until the apiserver serves them. */
async function installCrds(plane: ControlPlane): Promise<void> {
  const crdsDir = await storageVersionCrdDir(join(repoRoot, "crds"));
  const files = (await readdir(crdsDir)).filter((name) => name.endsWith(".json")).map((name) => join(crdsDir, name));
  const fileArgs = files.flatMap((file) => ["-f", file]);
  const kubectl = plane.binaries.kubectl ?? "kubectl";
  await execFileAsync(kubectl, ["--kubeconfig", plane.kubeconfigPath, "apply", "--server-side", ...fileArgs]);
  await waitForCrdsEstablished(
    async (args) => (await execFileAsync(kubectl, ["--kubeconfig", plane.kubeconfigPath, ...args])).stdout,
    fileArgs,
  );
}

describe.skipIf(existingCluster)("kube-apiserver restarted under a running keyward", () => {
  let plane: ControlPlane | undefined;
  let kc: KubeConfig;
  let emulator: Emulator | undefined;
  let keyward: RunningKeyward | undefined;

  beforeAll(async () => {
    plane = await startControlPlane({ binaries: await ensureBinaries(), withControllerManager: false });
    kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    await installCrds(plane);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    emulator = await startEmulator({ tokens: [TOKEN] });
    await installProvider(kc, namespace, emulator.url, TOKEN);
    keyward = await startKeyward(kc, { namespaces: [namespace], resyncIntervalMs: 2_000 });
  });

  afterAll(async () => {
    await keyward?.stop();
    await emulator?.close();
    await plane?.stop();
  });

  const running = (): { plane: ControlPlane; emulator: Emulator; keyward: RunningKeyward } => {
    if (!plane || !emulator || !keyward) throw new Error("beforeAll did not finish");
    return { plane, emulator, keyward };
  };

  const readyProject = (name: string): Promise<KubeObject> =>
    waitFor(
      async () => {
        const obj = await getCustom(kc, namespace, "projects", name);
        return isReady(obj) ? obj : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500, description: `Project ${name} Ready` },
    );

  const projectRestarts = async (k: RunningKeyward): Promise<number> =>
    (await k.operator.metrics.informerRestarts.get()).values
      .filter((v) => v.labels.kind === "Project")
      .reduce((sum, v) => sum + v.value, 0);

  /** keyward's log lines since `mark` whose message starts with `message`, parsed. */
  const logsSince = (k: RunningKeyward, mark: number, message: string): Record<string, unknown>[] =>
    k.logs
      .slice(mark)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => typeof entry["msg"] === "string" && entry["msg"].startsWith(message));

  it("sees new objects and spec changes again once the apiserver is back", { timeout: 600_000 }, async () => {
    const { plane, emulator, keyward } = running();
    const requestsOf = (operation: string, projectId: string) =>
      emulator.requests().filter((r) => r.operation === operation && r.path.endsWith(`/projects/${projectId}`));

    await createCustom(kc, namespace, "projects", project("before", { name: "Before", slug: "before-restart" }));
    const before = await readyProject("before");
    const beforeId = String((before.status as Record<string, unknown>)["projectId"]);
    const restartsBefore = await projectRestarts(keyward);
    const mark = keyward.logs.length;

    await plane.stopApiserver();
    // The API is down: keyward's watches break. Its resync reconciles read the informer cache
    // and, in steady state, need no apiserver request at all: they still succeed. Wait until
    // both have happened, so the recovery below is a recovery from a broken watch.
    await waitFor(() => Promise.resolve(logsSince(keyward, mark, "informer restarting").length > 0 || undefined), {
      timeoutMs: 60_000,
      description: "an informer to notice the apiserver is gone",
    });
    const informerDown = keyward.logs.length;
    await waitFor(
      () =>
        Promise.resolve(
          logsSince(keyward, informerDown, "reconciled").some((entry) => entry["key"] === `${namespace}/before`) || undefined,
        ),
      {
        timeoutMs: 60_000,
        description: "a resync reconcile of Project before, from the cache, while the apiserver is down",
      },
    );
    expect(logsSince(keyward, informerDown, "reconcile failed").filter((entry) => entry["key"] === `${namespace}/before`)).toEqual([]);
    await plane.startApiserver();

    // (a) A Project created after the restart is seen and created at the service.
    await createCustom(kc, namespace, "projects", project("after", { name: "After", slug: "after-restart" }));
    const after = await readyProject("after");
    expect(String((after.status as Record<string, unknown>)["projectId"])).not.toBe(beforeId);
    expect(
      emulator
        .requests()
        .filter((r) => r.operation === "createProject")
        .map((r) => (r.body as { slug?: string }).slug)
        .sort(),
    ).toEqual(["after-restart", "before-restart"]);

    // (b) A spec change of the first Project: exactly one update call at the service.
    expect(requestsOf("updateProject", beforeId)).toEqual([]);
    await mergePatchCustom(kc, namespace, "projects", "before", { spec: { description: "changed after the restart" } });
    const synced = await waitFor(
      async () => {
        const obj = await getCustom(kc, namespace, "projects", "before");
        const c = condition(obj, "Synced");
        return obj && c?.status === "True" && c.observedGeneration === obj.metadata.generation ? obj : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500, description: "Project before synced at its new generation" },
    );
    expect(isReady(synced)).toBe(true);
    const updates = requestsOf("updateProject", beforeId);
    expect(updates.map((r) => r.body)).toEqual([{ description: "changed after the restart" }]);
    // Two more resyncs read the project (steady state: through the shared listing) and write nothing.
    const looks = (): number =>
      requestsOf("getProject", beforeId).length + emulator.requests().filter((r) => r.operation === "listProjects").length;
    const readsAfterUpdate = looks();
    await waitFor(() => Promise.resolve(looks() >= readsAfterUpdate + 2 || undefined), {
      timeoutMs: 60_000,
      description: "two resync reads of Project before",
    });
    expect(requestsOf("updateProject", beforeId)).toHaveLength(1);

    // (c) The informers were restarted (logged and counted), and nothing blew up doing so.
    expect(await projectRestarts(keyward)).toBeGreaterThan(restartsBefore);
    const restartLines = logsSince(keyward, mark, "informer restarting");
    expect(restartLines.some((entry) => entry["informer"] === "Project")).toBe(true);
    expect(logsSince(keyward, mark, "informer event handler threw")).toEqual([]);
  });
});
