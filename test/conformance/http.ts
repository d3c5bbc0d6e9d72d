// A deliberately small HTTP caller for the conformance probe: global fetch, JSON in and out,
// nothing borrowed from src/api so that the probe stays independent of the client.

export interface HttpResponse {
  status: number; // 0 when no response arrived (network error, timeout)
  body: unknown; // parsed JSON, or the raw text when the body is not JSON, or undefined
  retryAfter: string | null;
  networkError?: string;
}

export interface CallOptions {
  // undefined: the probe's own token; null: no Authorization header; a string: that token.
  token?: string | null;
  body?: unknown;
  query?: Record<string, string | number | boolean>;
}

export type Call = (method: string, path: string, opts?: CallOptions) => Promise<HttpResponse>;

export interface CallerOptions {
  baseUrl: string;
  token: string;
  timeoutMs: number;
  // 429 is retried after Retry-After (capped) so the probe can run against a rate-limited deployment.
  maxRateLimitRetries: number;
  maxRetryAfterMs: number;
}

export function makeCaller(opts: CallerOptions): Call {
  const base = opts.baseUrl.replace(/\/+$/, "");
  return async (method, path, callOpts = {}) => {
    const url = buildUrl(base, path, callOpts.query);
    const token = callOpts.token === undefined ? opts.token : callOpts.token;
    let res = await send(method, url, token, callOpts.body, opts.timeoutMs);
    for (let attempt = 0; res.status === 429 && attempt < opts.maxRateLimitRetries; attempt++) {
      await sleep(retryAfterMs(res.retryAfter, opts.maxRetryAfterMs));
      res = await send(method, url, token, callOpts.body, opts.timeoutMs);
    }
    return res;
  };
}

function buildUrl(base: string, path: string, query: CallOptions["query"]): string {
  const url = new URL(base + path);
  for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, String(v));
  return url.toString();
}

async function send(method: string, url: string, token: string | null, body: unknown, timeoutMs: number): Promise<HttpResponse> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const init: RequestInit = { method, headers, signal: AbortSignal.timeout(timeoutMs) };
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  try {
    const res = await fetch(url, init);
    const text = await res.text();
    return { status: res.status, body: parseBody(text), retryAfter: res.headers.get("retry-after") };
  } catch (err) {
    return { status: 0, body: undefined, retryAfter: null, networkError: errorName(err) };
  }
}

function parseBody(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function errorName(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return "unknown error";
}

function retryAfterMs(header: string | null, capMs: number): number {
  const seconds = Number(header);
  if (!Number.isFinite(seconds) || seconds <= 0) return Math.min(1000, capMs);
  return Math.min(seconds * 1000, capMs);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
