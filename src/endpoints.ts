// keyward's HTTP endpoints: /healthz and /readyz for the kubelet, /metrics for Prometheus.
// /metrics is either reviewed against the apiserver (metricsAuth "kubernetes": TokenReview and
// SubjectAccessReview, as controller-runtime's metrics filter does) or served on the loopback
// interface only ("localhost"); the probes never need a token.
import type { IncomingMessage, Server } from "node:http";
import { once } from "node:events";
import type { Registry } from "prom-client";
import { nodeHttp } from "./lib/node-http.ts";
import type { MetricsAuthorizer } from "./kube/metrics-auth.ts";

export interface Health {
  ready: boolean;
}

interface Answer {
  status: number;
  body: string;
  type?: string;
}

export interface EndpointsOptions {
  metricsPort: number;
  healthPort: number;
  bindAddress: string;
  registry: Registry;
  health: Health;
  /** Set: /metrics needs a token this authorizer allows. Unset: /metrics listens on 127.0.0.1 only. */
  authorizer?: MetricsAuthorizer;
}

function startHttp(port: number, host: string, handler: (path: string, req: IncomingMessage) => Answer | Promise<Answer>): Server {
  const server = nodeHttp.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    Promise.resolve(handler(path, req))
      .then((r) => {
        res.writeHead(r.status, { "content-type": r.type ?? "text/plain; charset=utf-8" });
        res.end(r.body);
      })
      .catch((err: unknown) => {
        res.writeHead(500);
        res.end(String(err));
      });
  });
  server.listen(port, host);
  return server;
}

const probesOf =
  (health: Health) =>
  (path: string): Answer => {
    if (path === "/healthz" || path === "/livez") return { status: 200, body: "ok" };
    if (path === "/readyz") return health.ready ? { status: 200, body: "ok" } : { status: 503, body: "not ready" };
    return { status: 404, body: "not found" };
  };

/** /healthz and /readyz alone (the webhook's process, which has no metrics); resolves once it listens. */
export async function startProbes(port: number, bindAddress: string, health: Health): Promise<Server> {
  const server = startHttp(port, bindAddress, probesOf(health));
  if (!server.listening) await once(server, "listening");
  return server;
}

/** Starts the servers (one when the ports are equal); resolves once they listen. */
export async function startEndpoints(opts: EndpointsOptions): Promise<Server[]> {
  const { registry, health, authorizer } = opts;
  const probes = probesOf(health);
  const metrics = async (path: string, req: IncomingMessage): Promise<Answer> => {
    if (path !== "/metrics") return probes(path);
    if (authorizer) {
      const decision = await authorizer.check(req.headers.authorization);
      if (decision.status !== 200) return { status: decision.status, body: decision.message };
    }
    return { status: 200, body: await registry.metrics(), type: registry.contentType };
  };
  // Without an authorizer nobody but the pod itself (and kubectl port-forward) may reach /metrics.
  const metricsHost = authorizer ? opts.bindAddress : "127.0.0.1";
  const servers =
    opts.metricsPort === opts.healthPort
      ? [startHttp(opts.metricsPort, metricsHost, metrics)]
      : [startHttp(opts.metricsPort, metricsHost, metrics), startHttp(opts.healthPort, opts.bindAddress, probes)];
  await Promise.all(servers.filter((s) => !s.listening).map((s) => once(s, "listening")));
  return servers;
}
