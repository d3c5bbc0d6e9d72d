// The apiserver's own request counters (apiserver_request_total from /metrics), summed by verb
// and resource, so a window's Kubernetes API traffic can be told apart by what it touched.
// Requests across all namespaces (scope "cluster") carry a " (all namespaces)" suffix: keyward
// watching named namespaces makes none, the bench's own readiness watch makes only those.
export type RequestCounts = Map<string, number>;

const sample = /^apiserver_request_total\{([^}]*)\}\s+(\S+)$/;
const label = /(\w+)="([^"]*)"/g;

export function parseRequestCounts(metricsText: string): RequestCounts {
  const counts: RequestCounts = new Map();
  for (const line of metricsText.split("\n")) {
    const m = sample.exec(line);
    if (!m) continue;
    const labels = new Map<string, string>([...(m[1] ?? "").matchAll(label)].map((l) => [l[1] ?? "", l[2] ?? ""]));
    const resource = labels.get("resource");
    if (!resource) continue;
    const subresource = labels.get("subresource");
    const scope = labels.get("scope") === "cluster" ? " (all namespaces)" : "";
    const key = `${labels.get("verb") ?? "?"} ${resource}${subresource ? `/${subresource}` : ""}${scope}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(m[2]));
  }
  return counts;
}

/** What changed between two readings, without the keys that did not move. */
export function countsDelta(before: RequestCounts, after: RequestCounts): RequestCounts {
  const delta: RequestCounts = new Map();
  for (const [key, value] of after) {
    const d = value - (before.get(key) ?? 0);
    if (d > 0) delta.set(key, d);
  }
  return delta;
}
