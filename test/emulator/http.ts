// Small node:http helpers: read a body, answer JSON, split a URL.
import type { IncomingMessage, ServerResponse } from "node:http";

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export type ParsedBody = { ok: true; value: unknown } | { ok: false; raw: string };

/** An empty body is `undefined`; text that is not JSON is reported, not thrown. */
export function parseJsonBody(text: string): ParsedBody {
  if (text.trim() === "") return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, raw: text };
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(Buffer.byteLength(payload)),
    ...headers,
  });
  res.end(payload);
}

export function splitUrl(rawUrl: string | undefined): { path: string; query: Record<string, string> } {
  const url = new URL(rawUrl ?? "/", "http://emulator.invalid");
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) if (!(key in query)) query[key] = value;
  return { path: url.pathname, query };
}

/** A delay that does not keep the process alive on its own. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());
