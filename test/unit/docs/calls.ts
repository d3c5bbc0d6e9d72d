// The service calls docs/connect.md lists per kind (its "Permissions the token needs" table), so
// the tests can hold the page to the client's operations and to the requests keyward really makes.
import { markdownSection } from "./blocks.ts";

export interface DocumentedCall {
  method: string;
  /** The path template as the page writes it: `/api/v1/projects/{projectId}`. */
  path: string;
}

/** Every `METHOD /path` code span of the page's permissions section. */
export function documentedCalls(markdown: string): DocumentedCall[] {
  const section = markdownSection("docs/connect.md", markdown, "Permissions the token needs").lines.join("\n");
  return [...section.matchAll(/`(GET|POST|PATCH|DELETE) (\/[^`\s]*)`/g)].map((m) => ({ method: m[1] ?? "", path: m[2] ?? "" }));
}

/** Whether a request (`method`, a concrete path without query) is one of `calls`. */
export function isDocumented(calls: readonly DocumentedCall[], method: string, path: string): boolean {
  return calls.some((c) => {
    if (c.method !== method) return false;
    const pattern = c.path.split(/\{\w+\}/).map((part) => part.replace(/[.*+?^$()|[\]\\]/g, "\\$&"));
    return new RegExp(`^${pattern.join("[^/]+")}$`).test(path);
  });
}
