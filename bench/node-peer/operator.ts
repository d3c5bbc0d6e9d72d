// A minimal Node operator doing what bench/go-operator does, line for line, for the engine bench's
// side by side (ENGINE_BENCH_NODE_PEER=1): the runtime's floor for keyward's create path. One list
// and watch of the namespace's Projects into a map, a deduplicating queue with --concurrency
// workers, and per Project: a lookup by slug at the service, the create, one status merge patch
// (keyward's Project status, as the Go peer's) and one Event — with --create-guard also the
// create-started mark (resourceVersion precondition) before the create and the id in
// keyward.dev/external-id after it, as keyward and the guarded Go peer. undici for both
// connections (HTTP/2 to the apiserver, as keyward), JSON.parse and JSON.stringify, nothing
// else: no validation, no engine, no metrics, no logger. The bench runs it
// as JavaScript (its types stripped, as keyward runs from dist/), under keyward's V8 flags. Not a
// model to copy: it retries every failure after a second, records nothing, and trusts every answer.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Agent, type Dispatcher } from "undici";

const { values } = parseArgs({
  options: {
    namespace: { type: "string" },
    "base-url": { type: "string" },
    concurrency: { type: "string", default: "4" },
    "create-guard": { type: "boolean", default: false },
  },
});
const namespace = values.namespace ?? "";
const baseUrl = new URL(values["base-url"] ?? "");
const guard = values["create-guard"];
const workers = Number(values.concurrency);
const serviceAuth = `Bearer ${process.env["SERVICE_TOKEN"] ?? ""}`;

// The apiserver's address and credentials, as the bench read them from its kubeconfig (a JSON file:
// server, ca, cert, key, token), so that the peer loads undici and nothing else.
const access = JSON.parse(readFileSync(process.env["NODE_PEER_ACCESS"] ?? "", "utf8")) as {
  server: string;
  ca?: string;
  cert?: string;
  key?: string;
  token?: string;
};
const kubeOrigin = new URL(access.server).origin;
const kubeDispatcher: Dispatcher = new Agent({ connect: { ca: access.ca, cert: access.cert, key: access.key } });
const kubeHeaders = (): Record<string, string> => ({
  accept: "application/json",
  "user-agent": "node-peer",
  ...(access.token ? { authorization: `Bearer ${access.token}` } : {}),
});
const service: Dispatcher = new Agent({ connections: 64 });
const projectsPath = `/apis/keyward.dev/v1alpha1/namespaces/${namespace}/projects`;

interface Project {
  metadata: { name: string; uid: string; generation: number; resourceVersion: string; annotations?: Record<string, string> };
  spec?: { deletionPolicy?: string };
  status?: { projectId?: string };
}

async function kubeCall(
  method: Dispatcher.HttpMethod,
  path: string,
  body?: unknown,
  contentType?: string,
): Promise<{ status: number; text: string }> {
  const headers = kubeHeaders();
  if (body !== undefined) headers["content-type"] = contentType ?? "application/json";
  const res = await kubeDispatcher.request({
    origin: kubeOrigin,
    path,
    method,
    headers,
    body: body === undefined ? null : JSON.stringify(body),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

async function serviceCall(method: Dispatcher.HttpMethod, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = { authorization: serviceAuth };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await service.request({
    origin: baseUrl.origin,
    path,
    method,
    headers,
    body: body === undefined ? null : JSON.stringify(body),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

function mustSucceed(what: string, res: { status: number; text: string }): string {
  if (res.status < 200 || res.status > 299) throw new Error(`${what}: HTTP ${String(res.status)}`);
  return res.text;
}

const MERGE = "application/merge-patch+json";

/** The service's project: the fields the status shows. */
interface ServiceProject {
  id: string;
  name: string;
  slug: string;
  type: string;
  orgId: string;
  version?: number | null;
  hasDeleteProtection?: boolean;
  environments?: Array<{ id: string; name: string; slug: string }>;
}

/** keyward's Project status for `p`, so that the peer writes objects of the same size as keyward. */
function statusOf(p: ServiceProject, generation: number, now: string): Record<string, unknown> {
  const condition = (type: string, reason: string, message: string): Record<string, unknown> => ({
    type,
    status: "True",
    reason,
    message,
    observedGeneration: generation,
    lastTransitionTime: now,
  });
  return {
    projectId: p.id,
    slug: p.slug,
    name: p.name,
    type: p.type,
    orgId: p.orgId,
    ...(p.version !== undefined && p.version !== null ? { version: p.version } : {}),
    hasDeleteProtection: p.hasDeleteProtection ?? false,
    environments: (p.environments ?? []).map((e) => ({ id: e.id, name: e.name, slug: e.slug })),
    observedGeneration: generation,
    conditions: [
      condition("Ready", "Available", "the external object is available"),
      condition("Synced", "ReconcileSuccess", "the external object matches the spec"),
    ],
  };
}
const cache = new Map<string, Project>();

async function reconcile(name: string): Promise<void> {
  const obj = cache.get(name);
  if (obj === undefined || obj.status?.projectId) return;
  const found = await serviceCall("GET", `/api/v1/projects/slug/${name}`);
  let project: ServiceProject;
  const mark = obj.metadata.annotations?.["keyward.dev/create-started"];
  if (found.status === 200 && guard && mark?.endsWith(` ${obj.metadata.uid}`) === true) {
    project = JSON.parse(found.text) as ServiceProject;
  } else if (found.status !== 404) {
    throw new Error(`slug ${name}: HTTP ${String(found.status)}`);
  } else {
    if (guard) {
      const metadata: Record<string, unknown> = {
        resourceVersion: obj.metadata.resourceVersion,
        annotations: { "keyward.dev/create-started": `${new Date().toISOString()} ${obj.metadata.uid}` },
      };
      if (obj.spec?.deletionPolicy === "Delete") metadata["finalizers"] = ["keyward.dev/finalizer"];
      // Each answer is parsed, as controller-runtime's client decodes it into the object.
      JSON.parse(mustSucceed("mark", await kubeCall("PATCH", `${projectsPath}/${name}`, { metadata }, MERGE)));
    }
    const created = mustSucceed("create", await serviceCall("POST", "/api/v2/workspace", { projectName: name, slug: name }));
    project = (JSON.parse(created) as { project: ServiceProject }).project;
  }
  if (guard) {
    const body = { metadata: { annotations: { "keyward.dev/external-id": project.id } } };
    JSON.parse(mustSucceed("id", await kubeCall("PATCH", `${projectsPath}/${name}`, body, MERGE)));
  }
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const status = statusOf(project, obj.metadata.generation, now);
  const patched = mustSucceed("status", await kubeCall("PATCH", `${projectsPath}/${name}/status`, { status }, MERGE));
  const after = JSON.parse(patched) as Project;
  // As client-go's recorder, the Event leaves the reconcile and goes out on its own.
  void kubeCall("POST", `/api/v1/namespaces/${namespace}/events`, {
    metadata: { generateName: `${name}.`, namespace },
    involvedObject: {
      apiVersion: "keyward.dev/v1alpha1",
      kind: "Project",
      name,
      namespace,
      uid: after.metadata.uid,
      resourceVersion: after.metadata.resourceVersion,
    },
    reason: "Created",
    message: "created the external object",
    type: "Normal",
    source: { component: "node-peer" },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  }).catch(() => undefined);
}

// A set-backed queue: a key waits once, and a key being worked on waits again after it.
const waiting: string[] = [];
const queued = new Set<string>();
const active = new Set<string>();
const again = new Set<string>();
const idle: Array<() => void> = [];

function enqueue(name: string): void {
  if (active.has(name)) {
    again.add(name);
    return;
  }
  if (queued.has(name)) return;
  queued.add(name);
  waiting.push(name);
  idle.shift()?.();
}

async function next(): Promise<string> {
  for (;;) {
    const name = waiting.shift();
    if (name !== undefined) {
      queued.delete(name);
      return name;
    }
    await new Promise<void>((resolve) => idle.push(resolve));
  }
}

async function worker(): Promise<never> {
  for (;;) {
    const name = await next();
    active.add(name);
    try {
      await reconcile(name);
    } catch {
      setTimeout(() => enqueue(name), 1_000);
    } finally {
      active.delete(name);
      if (again.delete(name)) enqueue(name);
    }
  }
}

/** What GenerationChangedPredicate passes: a create, or an update whose generation moved. */
function onEvent(type: string, obj: Project): void {
  const name = obj.metadata.name;
  const before = cache.get(name);
  if (type === "DELETED") {
    cache.delete(name);
    return;
  }
  cache.set(name, obj);
  if (type === "ADDED" || before === undefined || before.metadata.generation !== obj.metadata.generation) enqueue(name);
}

async function watchFrom(resourceVersion: string): Promise<string> {
  const path = `${projectsPath}?watch=true&allowWatchBookmarks=true&resourceVersion=${resourceVersion}&timeoutSeconds=600`;
  const res = await kubeDispatcher.request({ origin: kubeOrigin, path, method: "GET", headers: kubeHeaders() });
  if (res.statusCode !== 200) throw new Error(`watch: HTTP ${String(res.statusCode)}`);
  let rest = "";
  let last = resourceVersion;
  res.body.setEncoding("utf8");
  for await (const chunk of res.body as AsyncIterable<string>) {
    rest += chunk;
    let at: number;
    while ((at = rest.indexOf("\n")) >= 0) {
      const line = rest.slice(0, at);
      rest = rest.slice(at + 1);
      if (line === "") continue;
      const event = JSON.parse(line) as { type: string; object: Project };
      if (event.type === "ERROR") throw new Error("watch: expired");
      last = event.object.metadata.resourceVersion;
      if (event.type !== "BOOKMARK") onEvent(event.type, event.object);
    }
  }
  return last;
}

// The bench stops it with SIGTERM: exit as a program does, so that --cpu-prof writes its profile.
process.once("SIGTERM", () => process.exit(0));

async function main(): Promise<void> {
  const list = JSON.parse(mustSucceed("list", await kubeCall("GET", projectsPath))) as {
    metadata: { resourceVersion: string };
    items: Project[];
  };
  for (const item of list.items) onEvent("ADDED", item);
  for (let i = 0; i < workers; i++) void worker();
  console.log("node-peer: started");
  let resourceVersion = list.metadata.resourceVersion;
  for (;;) resourceVersion = await watchFrom(resourceVersion);
}

await main();
