// Raw requests to the apiserver by path, for what the generated clients do not cover
// generically: listing and watching any kind (core or custom) by its KindRef. Auth and TLS come
// from the kubeconfig exactly as client-node's own Watch applies them.
import { ApiException, HttpMethod, RequestContext, type KubeConfig } from "@kubernetes/client-node";
import { fetch, type Response } from "undici";

export interface KubeRequest {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

export async function kubeFetch(kc: KubeConfig, req: KubeRequest): Promise<Response> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("kubeconfig has no current cluster");
  const url = new URL(cluster.server.replace(/\/+$/, "") + req.path);
  for (const [key, value] of Object.entries(req.query ?? {})) {
    if (value !== undefined) url.searchParams.set(key, String(value));
  }
  const method = req.method ?? "GET";
  const ctx = new RequestContext(url.toString(), HttpMethod[method]);
  await kc.applySecurityAuthentication(ctx);
  const headers = ctx.getHeaders();
  headers["Accept"] = "application/json";
  if (req.body !== undefined) headers["Content-Type"] = req.contentType ?? "application/json";
  return fetch(url, {
    method,
    headers,
    body: req.body === undefined ? null : JSON.stringify(req.body),
    dispatcher: ctx.getDispatcher(),
    signal: req.signal ?? null,
  });
}

/** A JSON request; a non-2xx answer throws client-node's ApiException (same shape as the generated clients). */
export async function kubeJson<T>(kc: KubeConfig, req: KubeRequest): Promise<T> {
  const response = await kubeFetch(kc, req);
  const text = await response.text();
  if (response.status < 200 || response.status > 299) {
    throw new ApiException(response.status, statusMessage(text) ?? response.statusText, text, headersOf(response));
  }
  return JSON.parse(text) as T;
}

function statusMessage(text: string): string | undefined {
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    return typeof parsed.message === "string" ? parsed.message : undefined;
  } catch {
    return undefined;
  }
}

function headersOf(response: Response): Record<string, string> {
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/**
 * One line describing an error for logs and restart reasons: "HTTP 404: <apiserver message>"
 * for API errors (client-node's ApiException message spans lines and embeds headers).
 */
export function errorSummary(err: unknown): string {
  if (err instanceof ApiException) {
    const body: unknown = err.body;
    const message =
      typeof body === "string"
        ? statusMessage(body)
        : typeof body === "object" && body !== null && typeof (body as { message?: unknown }).message === "string"
          ? (body as { message: string }).message
          : undefined;
    return message ? `HTTP ${err.code}: ${message}` : `HTTP ${err.code}`;
  }
  if (err instanceof Error) return err.message.split("\n")[0] ?? err.name;
  return String(err);
}
