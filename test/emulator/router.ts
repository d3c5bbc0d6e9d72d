// Route table matching: "/api/v1/projects/:projectId" style patterns, first match wins, so
// routes with literal segments are listed before parameterised ones that could shadow them.
import type { Core } from "./core.ts";

export type LimitClass = "read" | "write" | "projectCreate";

export interface HandlerContext {
  core: Core;
  method: string;
  path: string;
  params: Record<string, string>;
  query: Record<string, string>;
  body: unknown;
}

export interface Route {
  method: string;
  path: string;
  operation: string;
  limit: LimitClass;
  /** No token needed (a token, when sent, must still be valid). */
  anonymous?: boolean;
  handle(ctx: HandlerContext): unknown;
}

export interface RouteMatch {
  route: Route;
  params: Record<string, string>;
}

export function matchRoute(routes: readonly Route[], method: string, path: string): RouteMatch | undefined {
  const segments = path.split("/").slice(1);
  for (const route of routes) {
    if (route.method !== method) continue;
    const params = matchSegments(route.path.split("/").slice(1), segments);
    if (params) return { route, params };
  }
  return undefined;
}

function matchSegments(pattern: string[], segments: string[]): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [index, part] of pattern.entries()) {
    const segment = segments[index] ?? "";
    if (part.startsWith(":")) {
      const value = safeDecode(segment);
      if (value === undefined) return undefined;
      params[part.slice(1)] = value;
    } else if (part !== segment) {
      return undefined;
    }
  }
  return params;
}

function safeDecode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
