// Issue 16 §4: kubeconfig exec credential plugins, run for real as small shell scripts. stdin is
// closed, a plugin that hangs (or prints without end) is killed, and a plugin that fails or
// prints something that is not an ExecCredential gives a clear error that never echoes what it
// printed — it may have printed the token.
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { loadKubeAccess } from "../../../src/kube/kubeconfig.ts";
import { KubeTimeoutError, kubeJson } from "../../../src/kube/rest.ts";
import { watchKind } from "../../../src/kube/informer.ts";
import { createLogger } from "../../../src/log.ts";

const FAKE_TOKEN = "fake-exec-token-8d1e55c0b2";
const dir = mkdtempSync(join(tmpdir(), "kw-exec-"));

/** A kubeconfig whose user runs `script` (a shell script body) as its exec plugin. */
function kubeconfigWith(name: string, script: string, args: string[] = [], server = "https://127.0.0.1:1"): string {
  const plugin = join(dir, `${name}.sh`);
  writeFileSync(plugin, `#!/bin/sh\n${script}\n`);
  chmodSync(plugin, 0o755);
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server } }],
      users: [
        { name: "u", user: { exec: { apiVersion: "client.authentication.k8s.io/v1", command: plugin, args, interactiveMode: "Never" } } },
      ],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  return path;
}

const credential = (token: string): string =>
  JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", status: { token } });

async function failureOf(path: string, execTimeoutMs = 5_000): Promise<Error> {
  const access = loadKubeAccess({ kubeconfigPath: path, execTimeoutMs });
  try {
    await access.authorization();
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected the plugin to fail");
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("exec credential plugin", () => {
  it("a plugin that prints a token works, with stdin closed (a plugin reading stdin gets EOF, not a hang)", async () => {
    const path = kubeconfigWith("ok", `read line\necho '${credential(FAKE_TOKEN)}'`);
    await expect(loadKubeAccess({ kubeconfigPath: path, execTimeoutMs: 5_000 }).authorization()).resolves.toBe(`Bearer ${FAKE_TOKEN}`);
  });

  it("non-JSON output containing the token: a clear error without the output", async () => {
    const err = await failureOf(kubeconfigWith("garbage", `echo "token=${FAKE_TOKEN} (not json)"`));
    expect(err.message).toMatch(/exec credential plugin .*garbage\.sh printed no ExecCredential \(not JSON\)/);
    expect(err.message).not.toContain(FAKE_TOKEN);
    expect(err.cause).toBeUndefined();
    expect(JSON.stringify(err)).not.toContain(FAKE_TOKEN);
  });

  it("JSON of the wrong shape (token not a string, status not an object): a clear error without the output", async () => {
    for (const [name, out] of [
      ["number-token", `{"status":{"token":12345,"note":"${FAKE_TOKEN}"}}`],
      ["array", `["${FAKE_TOKEN}"]`],
      ["status-string", `{"status":"${FAKE_TOKEN}"}`],
      ["truncated", `{"status":{"token":"${FAKE_TOKEN}`],
    ] as const) {
      const err = await failureOf(kubeconfigWith(name, `printf '%s' '${out}'`));
      expect(err.message, name).toMatch(/printed no ExecCredential|returned no token/);
      expect(err.message, name).not.toContain(FAKE_TOKEN);
    }
  });

  it("a plugin exiting non-zero: the exit code, never its stdout, stderr or arguments", async () => {
    const err = await failureOf(
      kubeconfigWith("fails", `echo "${FAKE_TOKEN}"\necho "stderr ${FAKE_TOKEN}" >&2\nexit 3`, [`--secret=${FAKE_TOKEN}`]),
    );
    expect(err.message).toMatch(/exec credential plugin .*fails\.sh failed: exited with code 3/);
    expect(err.message).not.toContain(FAKE_TOKEN);
  });

  it("a plugin that hangs is killed at the timeout", async () => {
    const pidFile = join(dir, "hang.pid");
    const err = await failureOf(kubeconfigWith("hang", `echo $$ > ${pidFile}\nexec sleep 1000`), 300);
    expect(err.message).toMatch(/exec credential plugin .*hang\.sh did not answer within 300 ms and was killed/);
    expect(existsSync(pidFile)).toBe(true);
    expect(alive(Number(readFileSync(pidFile, "utf8").trim()))).toBe(false);
  });

  it("a plugin printing without end is killed at 1 MiB of output", async () => {
    const pidFile = join(dir, "yes.pid");
    const err = await failureOf(kubeconfigWith("endless", `echo $$ > ${pidFile}\nexec yes ${FAKE_TOKEN}`));
    expect(err.message).toMatch(/exec credential plugin .*endless\.sh printed more than 1048576 bytes and was killed/);
    expect(err.message).not.toContain(FAKE_TOKEN);
    expect(alive(Number(readFileSync(pidFile, "utf8").trim()))).toBe(false);
  });

  it("no uncaught exception: a failed plugin rejects the call and the next call runs it again", async () => {
    const counter = join(dir, "runs");
    writeFileSync(counter, "");
    const path = kubeconfigWith("again", `echo run >> ${counter}\necho "not json ${FAKE_TOKEN}"`);
    const access = loadKubeAccess({ kubeconfigPath: path, execTimeoutMs: 5_000 });
    await expect(access.authorization()).rejects.toThrow(/not JSON/);
    await expect(access.authorization()).rejects.toThrow(/not JSON/);
    expect(readFileSync(counter, "utf8").trim().split("\n")).toHaveLength(2);
  });
});

describe("a hung exec credential plugin is blamed on the plugin, not the apiserver", () => {
  // An apiserver that counts requests and answers each at once: a request that reaches it is served.
  const servers: Server[] = [];
  afterAll(() => {
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });
  async function apiserver(): Promise<{ url: string; requests: () => number }> {
    let requests = 0;
    const server = createServer((_req, res) => {
      requests++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"metadata":{"resourceVersion":"1"},"items":[]}');
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
  }

  // The plugin's timeout is longer than the request deadline (the default has both at 30 s): the
  // request deadline must not fire while the credential is still being obtained.
  const EXEC_MS = 400;
  const REQUEST_MS = 100;

  it("a request: the error names the plugin and its timeout, not the apiserver; the apiserver is never asked", async () => {
    const { url, requests } = await apiserver();
    const path = kubeconfigWith("sleeper", "exec sleep 1000", [], url);
    const access = { ...loadKubeAccess({ kubeconfigPath: path, execTimeoutMs: EXEC_MS }), requestTimeoutMs: REQUEST_MS };
    const err = await kubeJson(access, { path: "/api/v1/namespaces/a/secrets/b" }).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(KubeTimeoutError);
    expect((err as Error).message).toMatch(new RegExp(`exec credential plugin \\S*sleeper\\.sh did not answer within ${EXEC_MS} ms`));
    expect((err as Error).message).not.toMatch(/no answer from the apiserver/);
    expect(requests()).toBe(0);
  });

  it("a request deadline shorter than the plugin's still covers the apiserver once the credential is in", async () => {
    const { url, requests } = await apiserver();
    // The plugin answers only after more than one request deadline has passed. The deadline is
    // long enough for a loopback answer on a loaded machine (100 ms was not, once).
    const requestMs = 2_000;
    const path = kubeconfigWith("slow-ok", `sleep 2.5\necho '${credential(FAKE_TOKEN)}'`, [], url);
    const access = { ...loadKubeAccess({ kubeconfigPath: path, execTimeoutMs: 10_000 }), requestTimeoutMs: requestMs };
    await expect(kubeJson(access, { path: "/api/v1/secrets" })).resolves.toMatchObject({ metadata: { resourceVersion: "1" } });
    expect(requests()).toBe(1);
  });

  it("an informer: every restart reason and log line names the plugin and its timeout, none blames the apiserver", async () => {
    const { url, requests } = await apiserver();
    const path = kubeconfigWith("sleeper-informer", "exec sleep 1000", [], url);
    const access = { ...loadKubeAccess({ kubeconfigPath: path, execTimeoutMs: EXEC_MS }), requestTimeoutMs: REQUEST_MS };
    const lines: { msg?: string; error?: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString("utf8").split("\n")) if (line.trim()) lines.push(JSON.parse(line) as (typeof lines)[number]);
        done();
      },
    });
    const reasons: string[] = [];
    const informer = watchKind(
      { access },
      { group: "", version: "v1", plural: "secrets", kind: "Secret" },
      {
        logger: createLogger({ level: "warn" }, sink),
        onEvent: () => undefined,
        onRestart: (reason) => reasons.push(reason),
        restartBackoff: { baseMs: 20, maxMs: 50 },
      },
    );
    const started = informer.start().catch(() => undefined);
    for (let i = 0; i < 1000 && reasons.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    informer.stop();
    await started;
    expect(reasons.length).toBeGreaterThanOrEqual(2);
    for (const reason of reasons) {
      expect(reason).toMatch(new RegExp(`exec credential plugin \\S*sleeper-informer\\.sh did not answer within ${EXEC_MS} ms`));
      expect(reason).not.toMatch(/no answer from the apiserver/);
    }
    expect(JSON.stringify(lines)).not.toMatch(/no answer from the apiserver/);
    expect(requests()).toBe(0);
  });
});
