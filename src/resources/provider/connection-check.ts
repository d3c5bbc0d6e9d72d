// A provider config's own check, the same for ProviderConfig and ClusterProviderConfig: does the
// service answer one cheap read with its credentials? The answer goes into status as Ready,
// with the base URL, the kind's own fields and, for tokenAuth, the current token's times.
//
// May import: src/api, src/kube, src/engine and other files of src/resources/provider; never a
// kind's file (the kind passes its ref, its object and how to connect it).
import { isResponseTooLarge, type ApiClient } from "../../api/index.ts";
import type { KindRef, Kube } from "../../kube/client.ts";
import type { EventRecorder } from "../../kube/events.ts";
import { writeStatus } from "../../engine/status.ts";
import { classifyError, throttleDelay } from "../../engine/errors.ts";
import { throttled, type KubeObject, type Outcome } from "../../engine/types.ts";
import { tokenStatus, type TokenSchedules } from "./token-schedule.ts";

export interface ReadyCondition {
  status: "True" | "False";
  reason: string;
  message: string;
}

/**
 * Writes the config's Ready condition, keeping its other status fields and setting `fields` over
 * them. `exact` (sharding): only onto the version read, so a copy handed to another replica
 * mid-pass is never written back (a 409).
 */
export async function writeReady(
  deps: { kube: Kube; events: EventRecorder; exact?: boolean },
  ref: KindRef,
  obj: KubeObject<unknown>,
  ready: ReadyCondition,
  fields: Record<string, unknown> = {},
): Promise<void> {
  const { conditions: _c, observedGeneration: _g, ...kept } = obj.status ?? {};
  await writeStatus({
    kube: deps.kube,
    ref,
    obj,
    kindStatus: { ...kept, ...fields },
    conditions: { ready: { type: "Ready", ...ready } },
    now: new Date(),
    events: deps.events,
    exact: deps.exact === true,
  });
}

/**
 * What the check leaves the reconcile to do: come back at its turn (the check was throttled and
 * status is untouched), or look again after the shortest of the delays it names, if any.
 */
export type ConnectionCheck =
  | { throttled: Outcome }
  | {
      throttled?: undefined;
      /** The check failed in a way that may pass: look again this soon. */
      retryInMs: number | undefined;
      /** tokenAuth: look again then, so the next token is minted on time even when nothing else calls. */
      renewInMs: number | undefined;
    };

/** Says so when the cluster admin's ceiling (--max-request-timeout) cut the spec's timeoutSeconds. */
export function timeoutNote(spec: unknown, effectiveMs: number): string {
  const asked = (spec as { timeoutSeconds?: unknown } | undefined)?.timeoutSeconds;
  const askedMs = (typeof asked === "number" ? asked : 10) * 1000;
  if (effectiveMs >= askedMs) return "";
  return `; requests time out after ${effectiveMs / 1000} s, not the ${askedMs / 1000} s asked (capped by keyward's --max-request-timeout)`;
}

/** Checks the connection of a provider config and writes its Ready condition and status. */
export async function checkConnection(
  deps: { kube: Kube; events: EventRecorder; recheckMs: number; exact?: boolean },
  config: {
    ref: KindRef;
    obj: KubeObject<unknown>;
    /** `ProviderConfig/ns/name` or `ClusterProviderConfig/name`: whose token schedule status shows. */
    configId: string;
    connect: () => Promise<ApiClient>;
    schedules: TokenSchedules;
    /** The Ready message when the service answers. */
    connected: string;
    /** The kind's own status fields, written after baseUrl. */
    fields: Record<string, unknown>;
  },
): Promise<ConnectionCheck> {
  let ready: ReadyCondition;
  let retry = false;
  try {
    const client = await config.connect();
    const note = await listProjectsAnswered(client);
    ready = { status: "True", reason: "Connected", message: config.connected + timeoutNote(config.obj.spec, client.timeoutMs) + note };
  } catch (err) {
    // Its check shares the credential's rate limit with its users: when that turns it away, the
    // check waits its turn and Ready stays as it was (a flip would requeue every user).
    const turn = throttleDelay(err);
    if (turn !== undefined) return { throttled: throttled(turn) };
    const c = classifyError(err);
    retry = c.retryable;
    ready = { status: "False", reason: c.reason, message: c.message };
  }
  const baseUrl = (config.obj.spec as { baseUrl?: string } | undefined)?.baseUrl;
  const token = tokenStatus(config.schedules, config.configId, config.obj.spec);
  await writeReady(deps, config.ref, config.obj, ready, { ...(baseUrl ? { baseUrl } : {}), ...config.fields, ...token.status });
  return { retryInMs: retry ? Math.min(deps.recheckMs, 30_000) : undefined, renewInMs: token.renewInMs };
}

/**
 * The check's read. An answer refused unread for its size (an organisation with more projects than
 * --max-response-bytes holds) still came with a success status for these credentials: connected.
 * Returns what the Ready message adds then.
 */
async function listProjectsAnswered(client: ApiClient): Promise<string> {
  try {
    await client.listProjects({});
    return "";
  } catch (err) {
    if (!isResponseTooLarge(err) || err.httpStatus < 200 || err.httpStatus > 299) throw err;
    return `; its project list is larger than --max-response-bytes (${String(err.limitBytes)} bytes), so resources read their own objects instead of shared listings`;
  }
}
