// The emulator over real HTTP for the client's tests: one per test file, default seed.
import { randomBytes } from "node:crypto";
import { createApiClient, operationByName, type ApiClient, type ClientOptions, type OperationName } from "../../../src/api/index.ts";
import { loadDefaultSeed } from "../../emulator/default-seed.ts";
import { startEmulator, type Emulator, type EmulatorOptions, type RecordedRequest } from "../../emulator/server.ts";

/** A recognisable token, so a test can search for it in errors and logs. */
export const TOKEN = `kw-test-${randomBytes(12).toString("hex")}`;

export { connectionIds, seedIds } from "../../emulator/default-seed.ts";

export const destinationConfigs = {
  "workflow-engine": { scope: "cluster", clusterUUID: "c0ffee00-0000-4000-8000-000000000001" },
  "code-host": { scope: "organization", org: "acme", visibility: "all" },
  "data-platform": { scope: "analytics" },
  "cloud-secrets-manager": { mappingBehavior: "one-to-one", region: "eu-central-1" },
  "app-platform": { appId: "app-1", appName: "shop" },
  "git-host": { repositorySlug: "repo", environmentId: "env-1", workspaceSlug: "acme" },
  monitoring: { accountId: "acc-1", accountName: "Acme", groupId: "grp-1", groupName: "Checks" },
} as const;

export interface Harness {
  em: Emulator;
  /** A client of the emulator with the test token; options override the defaults. */
  client(options?: Partial<ClientOptions>): ApiClient;
  /** Same, with request validation off: the service's 422 becomes observable. */
  unchecked(options?: Partial<ClientOptions>): ApiClient;
  /** Recorded /api requests of one of the client's operations (matched by method and path template). */
  requestsOf(operation: OperationName): RecordedRequest[];
}

/** The client's default: a request that never reached the service is sent at most 3 times (never after a wait). */
export const fastRetry = { maxAttempts: 3 };

export async function startHarness(options: Partial<EmulatorOptions> = {}): Promise<Harness> {
  const em = await startEmulator({ tokens: [TOKEN], seed: loadDefaultSeed(), jobDelayMs: 20, ...options });
  const client = (o: Partial<ClientOptions> = {}) => createApiClient({ baseUrl: em.url, token: TOKEN, retry: fastRetry, ...o });
  return {
    em,
    client,
    unchecked: (o = {}) => client({ validateRequests: false, ...o }),
    requestsOf: (operation) => {
      const op = operationByName[operation];
      const pattern = new RegExp(`^${op.path.replace(/\{\w+\}/g, "[^/]+")}$`);
      return em.requests().filter((r) => r.method === op.method && pattern.test(r.path));
    },
  };
}

let counter = 0;
/** A unique lowercase name for objects a test creates. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}-${Date.now().toString(36)}-${counter}`;
}

/** Polls until `check` passes; throws when the attempts run out (a safety net, not a timing claim). */
export async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, attempts = 1000): Promise<T> {
  let value = await read();
  for (let i = 0; i < attempts && !check(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    value = await read();
  }
  if (!check(value)) throw new Error(`eventually: the condition did not hold after ${attempts} attempts`);
  return value;
}

/** Catches the rejection of `p` (failing the test when it resolves). */
export async function rejectionOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected the call to fail, it succeeded");
}
