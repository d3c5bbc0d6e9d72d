// Where the apiserver is and how to authenticate to it, read from a kubeconfig or the pod's
// service account. keyward does not use client-node at run time: importing its KubeConfig pulls
// in the whole generated API (about 48 MB of resident memory, more than keyward's own working
// set at a thousand objects), while keyward needs only an URL, TLS material and a credential.
// What is supported: the in-cluster service account (its token re-read as the kubelet rotates
// it), and kubeconfig files — $KUBECONFIG lists merged the way kubectl merges them — with
// client certificates, bearer tokens (inline or tokenFile), basic auth, exec credential plugins
// that return a token, and an http(s) proxy-url. Legacy auth-provider plugins are refused with a
// clear message.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { load } from "js-yaml";
import { Agent, ProxyAgent, type Dispatcher } from "undici";

export interface KubeAccess {
  /** The apiserver's base URL, e.g. https://10.96.0.1:443. */
  server: string;
  /** One connection pool for every request (TLS identity included): connections are reused. */
  dispatcher: Dispatcher;
  /** A pool of its own with the same TLS identity and proxy (tests that need fresh connections). */
  newDispatcher(): Dispatcher;
  /**
   * The Authorization header value, when the user authenticates with one (refreshed as needed).
   * Bounded by its own deadline (an exec plugin's --exec-plugin-timeout), not by the request's:
   * requests obtain it before their deadline starts, so a hung plugin is reported as the plugin.
   */
  authorization(): Promise<string | undefined>;
  /** The current context's namespace (in-cluster: the pod's). */
  namespace: string | undefined;
  /** What the access was loaded from, for messages. */
  source: string;
  /** The deadline of one apiserver request (not of a watch's stream); default DEFAULT_KUBE_REQUEST_TIMEOUT_MS. */
  requestTimeoutMs?: number;
  /**
   * Middleware asked right before each request is sent, after its turn and its credential: a throw
   * refuses it unsent. Given when the access is made (sharding's fence: src/shard/fence.ts).
   */
  beforeSend?: (method: string, path: string) => void;
}

const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** Bound service-account tokens rotate (the kubelet rewrites the file): read it again this often. */
const TOKEN_FILE_REREAD_MS = 60_000;

/** Something that can print a kubeconfig (client-node's KubeConfig.exportConfig, used by tests and tools). */
export interface ExportableConfig {
  exportConfig(): string;
}

export type KubeSource = KubeAccess | ExportableConfig;

export function isKubeAccess(source: KubeSource): source is KubeAccess {
  return typeof (source as Partial<KubeAccess>).authorization === "function";
}

export interface LoadOptions {
  kubeconfigPath?: string;
  /** How long an exec credential plugin may run before it is killed; default DEFAULT_EXEC_TIMEOUT_MS. */
  execTimeoutMs?: number;
}

/** An explicit path, else $KUBECONFIG, else the in-cluster service account, else ~/.kube/config. */
export function loadKubeAccess(opts: LoadOptions = {}): KubeAccess {
  if (opts.kubeconfigPath) return fromFiles([opts.kubeconfigPath], opts);
  const env = process.env["KUBECONFIG"];
  if (env)
    return fromFiles(
      env.split(delimiter).filter((p) => p !== ""),
      opts,
    );
  if (process.env["KUBERNETES_SERVICE_HOST"] && existsSync(join(SERVICE_ACCOUNT_DIR, "token"))) return inCluster();
  return fromFiles([join(homedir(), ".kube", "config")], opts);
}

/** Access from a kubeconfig printed by another library (its file paths stay as they are). */
export function accessFrom(source: KubeSource): KubeAccess {
  if (isKubeAccess(source)) return source;
  return fromConfig(load(source.exportConfig()) as RawConfig, process.cwd(), "exported kubeconfig", {});
}

function inCluster(): KubeAccess {
  const host = process.env["KUBERNETES_SERVICE_HOST"] ?? "";
  const port = process.env["KUBERNETES_SERVICE_PORT"] ?? "443";
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const namespaceFile = join(SERVICE_ACCOUNT_DIR, "namespace");
  const connect = { ca: readFileSync(join(SERVICE_ACCOUNT_DIR, "ca.crt")) };
  const newDispatcher = (): Dispatcher => new Agent({ connect });
  return {
    server,
    dispatcher: newDispatcher(),
    newDispatcher,
    authorization: bearerFromFile(join(SERVICE_ACCOUNT_DIR, "token")),
    namespace: existsSync(namespaceFile) ? readFileSync(namespaceFile, "utf8").trim() : undefined,
    source: "in-cluster service account",
  };
}

// ---------------------------------------------------------------- kubeconfig files

interface Named<T> {
  name: string;
  [key: string]: unknown;
  cluster?: T;
  user?: T;
  context?: T;
}

interface RawConfig {
  clusters?: Named<Record<string, unknown>>[];
  users?: Named<Record<string, unknown>>[];
  contexts?: Named<Record<string, unknown>>[];
  "current-context"?: string;
}

interface Located {
  entry: Record<string, unknown>;
  /** The directory relative paths in the entry are relative to. */
  dir: string;
}

function fromFiles(paths: string[], opts: LoadOptions): KubeAccess {
  // kubectl's merge: the first file to name a cluster, user or context wins, and the first
  // current-context set wins.
  const merged = {
    clusters: new Map<string, Located>(),
    users: new Map<string, Located>(),
    contexts: new Map<string, Located>(),
    current: undefined as string | undefined,
  };
  const existing = paths.filter((p) => existsSync(p));
  if (existing.length === 0) throw new Error(`no kubeconfig found at ${paths.join(delimiter)}`);
  for (const path of existing) {
    const raw = (load(readFileSync(path, "utf8")) ?? {}) as RawConfig;
    const dir = dirname(resolve(path));
    for (const [list, into, field] of [
      [raw.clusters, merged.clusters, "cluster"],
      [raw.users, merged.users, "user"],
      [raw.contexts, merged.contexts, "context"],
    ] as const) {
      for (const item of list ?? []) {
        if (!into.has(item.name)) into.set(item.name, { entry: item[field] ?? {}, dir });
      }
    }
    merged.current ??= raw["current-context"] || undefined;
  }
  return resolveContext(merged, existing.join(delimiter), opts);
}

function fromConfig(raw: RawConfig, dir: string, source: string, opts: LoadOptions): KubeAccess {
  const toMap = (list: Named<Record<string, unknown>>[] | undefined, field: "cluster" | "user" | "context") =>
    new Map((list ?? []).map((item) => [item.name, { entry: item[field] ?? {}, dir }]));
  return resolveContext(
    {
      clusters: toMap(raw.clusters, "cluster"),
      users: toMap(raw.users, "user"),
      contexts: toMap(raw.contexts, "context"),
      current: raw["current-context"],
    },
    source,
    opts,
  );
}

/** A string field of a kubeconfig entry ("" when absent or not a string). */
function text(entry: Record<string, unknown>, field: string): string {
  const value = entry[field];
  return typeof value === "string" ? value : "";
}

function resolveContext(
  merged: { clusters: Map<string, Located>; users: Map<string, Located>; contexts: Map<string, Located>; current: string | undefined },
  source: string,
  opts: LoadOptions,
): KubeAccess {
  const contextName = merged.current ?? (merged.contexts.size === 1 ? [...merged.contexts.keys()][0] : undefined);
  if (!contextName) throw new Error(`kubeconfig ${source} has no current-context`);
  const context = merged.contexts.get(contextName)?.entry;
  if (!context) throw new Error(`kubeconfig ${source}: context ${contextName} not found`);
  const cluster = merged.clusters.get(text(context, "cluster"));
  if (!cluster) throw new Error(`kubeconfig ${source}: cluster ${text(context, "cluster")} of context ${contextName} not found`);
  const user = merged.users.get(text(context, "user")) ?? { entry: {}, dir: cluster.dir };
  const server = text(cluster.entry, "server");
  if (!/^https?:\/\//.test(server)) throw new Error(`kubeconfig ${source}: cluster ${text(context, "cluster")} has no http(s) server`);
  const c = cluster.entry;
  const u = user.entry;
  if (u["auth-provider"] !== undefined) {
    throw new Error(
      `kubeconfig ${source}: user ${text(context, "user")} uses a legacy auth-provider plugin, which keyward does not support; use an exec credential plugin, a token or a client certificate`,
    );
  }
  const connect = {
    ...pem("ca", c["certificate-authority-data"], c["certificate-authority"], cluster.dir),
    ...pem("cert", u["client-certificate-data"], u["client-certificate"], user.dir),
    ...pem("key", u["client-key-data"], u["client-key"], user.dir),
    ...(c["insecure-skip-tls-verify"] === true ? { rejectUnauthorized: false } : {}),
    ...(typeof c["tls-server-name"] === "string" ? { servername: c["tls-server-name"] } : {}),
  };
  const proxyUrl = typeof c["proxy-url"] === "string" && c["proxy-url"] !== "" ? c["proxy-url"] : undefined;
  const newDispatcher = (): Dispatcher => (proxyUrl ? new ProxyAgent({ uri: proxyUrl, requestTls: connect }) : new Agent({ connect }));
  return {
    server: server.replace(/\/+$/, ""),
    dispatcher: newDispatcher(),
    newDispatcher,
    authorization: userAuthorization(u, user.dir, opts.execTimeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS),
    namespace: typeof context["namespace"] === "string" ? context["namespace"] : undefined,
    source,
  };
}

function pem(field: "ca" | "cert" | "key", data: unknown, file: unknown, dir: string): Record<string, Buffer> {
  if (typeof data === "string" && data !== "") return { [field]: Buffer.from(data, "base64") };
  if (typeof file === "string" && file !== "") return { [field]: readFileSync(isAbsolute(file) ? file : join(dir, file)) };
  return {};
}

function userAuthorization(u: Record<string, unknown>, dir: string, execTimeoutMs: number): () => Promise<string | undefined> {
  if (typeof u["token"] === "string" && u["token"] !== "") {
    const header = `Bearer ${u["token"]}`;
    return () => Promise.resolve(header);
  }
  if (typeof u["tokenFile"] === "string" && u["tokenFile"] !== "") {
    return bearerFromFile(isAbsolute(u["tokenFile"]) ? u["tokenFile"] : join(dir, u["tokenFile"]));
  }
  if (typeof u["username"] === "string" && typeof u["password"] === "string") {
    const header = `Basic ${Buffer.from(`${u["username"]}:${u["password"]}`).toString("base64")}`;
    return () => Promise.resolve(header);
  }
  if (typeof u["exec"] === "object" && u["exec"] !== null) return execCredential(u["exec"], execTimeoutMs);
  return () => Promise.resolve(undefined);
}

function bearerFromFile(path: string): () => Promise<string | undefined> {
  let cached: { header: string; at: number } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at > TOKEN_FILE_REREAD_MS) {
      cached = { header: `Bearer ${readFileSync(path, "utf8").trim()}`, at: Date.now() };
    }
    return Promise.resolve(cached.header);
  };
}

interface ExecConfig {
  command?: string;
  args?: string[];
  env?: { name: string; value: string }[] | null;
  apiVersion?: string;
}

/**
 * An exec plugin that has not printed its credential by then is killed (kubectl waits forever).
 * It is the credential step's own deadline: an apiserver request's deadline starts only once the
 * credential is in (src/kube/rest.ts), so a hung plugin fails as "exec credential plugin <command>
 * did not answer within N ms", never as an apiserver timeout.
 */
export const DEFAULT_EXEC_TIMEOUT_MS = 30_000;
/** The most a plugin may print; an ExecCredential is a few KiB. */
const EXEC_MAX_OUTPUT_BYTES = 1 << 20;

/**
 * Runs the plugin: stdin closed (keyward is never interactive, and a plugin that reads stdin gets
 * EOF rather than hanging), stdout kept up to EXEC_MAX_OUTPUT_BYTES, stderr discarded, killed
 * at `timeoutMs`. Resolves with its stdout; rejects with our own words only — the exit code or
 * signal — never what it printed or its arguments, since either may hold the token.
 */
function runPlugin(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<string> {
  return new Promise((resolveOut, reject) => {
    const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "ignore"] });
    const chunks: Buffer[] = [];
    let bytes = 0;
    let failure: string | undefined;
    const kill = (why: string): void => {
      failure ??= why;
      child.kill("SIGKILL");
    };
    const timer = setTimeout(() => kill(`did not answer within ${timeoutMs} ms and was killed`), timeoutMs);
    child.stdout.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > EXEC_MAX_OUTPUT_BYTES) kill(`printed more than ${EXEC_MAX_OUTPUT_BYTES} bytes and was killed`);
      else chunks.push(chunk);
    });
    child.on("error", (err: NodeJS.ErrnoException) => {
      failure ??= `could not be started${err.code ? ` (${err.code})` : ""}`;
    });
    // "close" waits for stdout to end too; a killed plugin's grandchildren could hold it open, so
    // a kill settles on "exit".
    const settle = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(timer);
      child.stdout.destroy();
      if (failure) reject(new Error(`kubeconfig exec credential plugin ${command} ${failure}`));
      else if (code !== 0)
        reject(
          new Error(
            `kubeconfig exec credential plugin ${command} failed: ${signal ? `killed by ${signal}` : `exited with code ${code ?? "?"}`}`,
          ),
        );
      else resolveOut(Buffer.concat(chunks).toString("utf8"));
    };
    child.on("exit", (code, signal) => {
      if (failure) settle(code, signal);
    });
    child.on("close", settle);
  });
}

/** status.token of an ExecCredential, checked field by field; errors never quote the output. */
function tokenOfCredential(command: string, stdout: string): { token: string; expires: number } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout);
  } catch {
    throw new Error(`kubeconfig exec credential plugin ${command} printed no ExecCredential (not JSON)`);
  }
  const status =
    typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as { status?: unknown }).status : undefined;
  if (status !== undefined && (typeof status !== "object" || status === null || Array.isArray(status))) {
    throw new Error(`kubeconfig exec credential plugin ${command} printed no ExecCredential (status is not an object)`);
  }
  const { token, expirationTimestamp } = (status ?? {}) as { token?: unknown; expirationTimestamp?: unknown };
  if (typeof token !== "string" || token === "") {
    throw new Error(
      `kubeconfig exec credential plugin ${command} returned no token (client certificates from exec plugins are not supported)`,
    );
  }
  const expires = typeof expirationTimestamp === "string" ? Date.parse(expirationTimestamp) : Number.NaN;
  return { token, expires: Number.isNaN(expires) ? Number.POSITIVE_INFINITY : expires };
}

/** client.authentication.k8s.io exec plugins: run the command, use status.token until it expires. */
function execCredential(exec: ExecConfig, timeoutMs: number): () => Promise<string | undefined> {
  if (!exec.command) throw new Error("kubeconfig: exec credential plugin without a command");
  const command = exec.command;
  let cached: { header: string; expires: number } | undefined;
  let running: Promise<string | undefined> | undefined;
  const run = async (): Promise<string | undefined> => {
    const env = { ...process.env, ...Object.fromEntries((exec.env ?? []).map((e) => [e.name, e.value])) };
    if (exec.apiVersion)
      env["KUBERNETES_EXEC_INFO"] = JSON.stringify({ apiVersion: exec.apiVersion, kind: "ExecCredential", spec: { interactive: false } });
    const { token, expires } = tokenOfCredential(command, await runPlugin(command, exec.args ?? [], env, timeoutMs));
    cached = { header: `Bearer ${token}`, expires };
    return cached.header;
  };
  return async () => {
    // Renewed a little before it expires, one run at a time.
    if (cached && cached.expires - 10_000 > Date.now()) return cached.header;
    running ??= run().finally(() => {
      running = undefined;
    });
    return running;
  };
}
