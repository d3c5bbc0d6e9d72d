// Test helpers: plain fetch against a started emulator.
import { startEmulator, type Emulator, type EmulatorOptions } from "./server.ts";
import { connectionIds } from "./default-seed.ts";

export const TOKEN = "test-static-token";

export interface Reply<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

export interface CallOptions {
  token?: string | null;
  body?: unknown;
  query?: Record<string, string>;
}

/** Calls the emulator; `token: null` sends no Authorization header. */
export async function call<T = Record<string, unknown>>(
  emu: Emulator,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Reply<T>> {
  const url = new URL(emu.url + path);
  for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, value);
  const headers: Record<string, string> = {};
  const token = options.token === undefined ? TOKEN : options.token;
  if (token !== null) headers["authorization"] = `Bearer ${token}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url, { method, headers, ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }) });
  const text = await res.text();
  return { status: res.status, body: (text === "" ? undefined : JSON.parse(text)) as T, headers: res.headers };
}

export function start(options: Partial<EmulatorOptions> = {}): Promise<Emulator> {
  return startEmulator({ tokens: [TOKEN], jobDelayMs: 20, ...options });
}

/** Polls until `check` returns a value (not a timed assertion: it waits for a state, bounded by the test timeout). */
export async function eventually<T>(check: () => Promise<T | undefined>, intervalMs = 10): Promise<T> {
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export const ids = {
  project: "a1b2c3d4-0005-4a00-8000-000000000001",
  pkiProject: "a1b2c3d4-0005-4a00-8000-000000000002",
  alice: "a1b2c3d4-0001-4a00-8000-000000000001",
  platformTeam: "a1b2c3d4-0002-4a00-8000-000000000001",
  securityTeam: "a1b2c3d4-0002-4a00-8000-000000000002",
  shortIdentity: "a1b2c3d4-0003-4a00-8000-000000000001",
  identity: "a1b2c3d4-0003-4a00-8000-000000000002",
  connections: connectionIds as Record<string, string>,
};
