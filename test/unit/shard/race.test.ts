// A seeded race over the sharding protocol: replicas joining, leaving, killed and restarted under
// their name, renewals delayed, the leader's Lease lists served stale, its label passes stalled,
// the leader replaced. Time is a fake clock of steps (250 ms each); the pieces that decide are the
// real ones — the leader's Lease observer (createShardObserver on the fake clock), the ring with
// bounded loads, the plan (shardChanges), the join handshake (joinPending), the holder's fence
// rules (renew deadline counted from the last renewal sent, a Lease written by another stops it
// for good) — around a model of the apiserver's Leases and objects with resourceVersions (every
// write conditional).
//
// Invariants, from the actions' log (an action: a replica's pass over one object, started only
// when it read its label there, cut off when its fence stops it sending):
// - no object is acted on by two replicas in overlapping intervals;
// - no object stays labelled for a dead replica longer than the bound docs/sharding.md states
//   (its Lease duration and a few retry periods, plus the schedule's own stalls, here in steps).
//
// The seed is printed on failure (fast-check); KEYWARD_RACE_SEED=<seed> replays it, and
// KEYWARD_RACE_RUNS sets the number of schedules.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { createShardObserver, joinPending, type ShardLease } from "../../../src/shard/leases.ts";
import { boundLoads, createRing, type Ring } from "../../../src/lib/ring.ts";
import { shardChanges, type ShardChange } from "../../../src/shard/plan.ts";
import { shardKey } from "../../../src/shard/sharder.ts";

const STEP_MS = 250;
// 6 s / 4 s / 1 s, the integration tests' Lease times, in steps.
const DURATION = 24;
const DEADLINE = 16;
const RETRY = 4;
const PREFIX = "kw-shard-";
const IDS = ["r0", "r1", "r2", "r3"] as const;
const NAMESPACES = Array.from({ length: 16 }, (_, i) => `ns-${String(i)}`);
const STEPS = 360;

type Op =
  | { at: number; op: "kill"; r: number }
  | { at: number; op: "stop"; r: number }
  | { at: number; op: "start"; r: number }
  | { at: number; op: "restart"; r: number; after: number }
  | { at: number; op: "restartDuringStall"; r: number; after: number; stall: number }
  | { at: number; op: "delayRenew"; r: number; steps: number }
  | { at: number; op: "staleList"; steps: number }
  | { at: number; op: "stallPass"; steps: number }
  | { at: number; op: "newLeader" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ at: fc.nat(STEPS - 40), op: fc.constant("kill" as const), r: fc.nat(IDS.length - 1) }),
  fc.record({ at: fc.nat(STEPS - 40), op: fc.constant("stop" as const), r: fc.nat(IDS.length - 1) }),
  fc.record({ at: fc.nat(STEPS - 40), op: fc.constant("start" as const), r: fc.nat(IDS.length - 1) }),
  fc.record({
    at: fc.nat(STEPS - 40),
    op: fc.constant("delayRenew" as const),
    r: fc.nat(IDS.length - 1),
    steps: fc.integer({ min: 1, max: 30 }),
  }),
  fc.record({ at: fc.nat(STEPS - 40), op: fc.constant("staleList" as const), steps: fc.integer({ min: 1, max: 40 }) }),
  fc.record({ at: fc.nat(STEPS - 40), op: fc.constant("stallPass" as const), steps: fc.integer({ min: 1, max: 60 }) }),
  fc.record({ at: fc.nat(STEPS - 40), op: fc.constant("newLeader" as const) }),
);

interface LeaseRec {
  holder: string;
  renew: string;
  rv: number;
  incarnation: string;
  joined?: string;
}
interface Obj {
  owner?: string;
  drain: boolean;
  rv: number;
}
interface Replica {
  id: string;
  alive: boolean;
  incarnation: string;
  sent: string[];
  held: boolean;
  lastSent: number;
  taken: boolean;
  joinedAt: number;
  started: boolean;
  nextRenew: number;
  renewBlockedUntil: number;
  inFlight: Map<string, { from: number; until: number }>;
  diedAt?: number;
}
interface Patch {
  key: string;
  change: ShardChange;
  rv: number;
  epoch: number;
  landsAt: number;
}

/** A deterministic hash: when a replica starts a pass on an object, and how long it runs. */
function mix(t: number, key: string, id: string): number {
  let h = 2166136261 ^ t;
  for (const c of `${key}|${id}`) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  h ^= h >>> 13;
  return Math.imul(h, 0x5bd1e995) >>> 0;
}

export type Rejoin = "handshake" | "timer";

/** Runs one schedule; returns the first invariant broken, or undefined. */
export function runSchedule(ops: readonly Op[], rejoin: Rejoin, trace?: string[]): string | undefined {
  let t = 0;
  let counter = 0;
  const leases = new Map<string, LeaseRec>();
  const history: Map<string, LeaseRec>[] = [];
  const objects = new Map<string, Obj>(NAMESPACES.map((ns) => [`${ns}/o`, { drain: false, rv: 1 }]));
  const actions = new Map<string, { r: string; from: number; to: number }[]>();
  const replicas = new Map<string, Replica>();
  const fresh = (id: string): Replica => ({
    id,
    alive: true,
    incarnation: `${id}-${String(++counter)}`,
    sent: [],
    held: false,
    lastSent: -1e9,
    taken: false,
    joinedAt: 0,
    started: false,
    nextRenew: t,
    renewBlockedUntil: 0,
    inFlight: new Map(),
  });
  for (const id of IDS.slice(0, 3)) replicas.set(id, fresh(id));

  // The leader.
  let observer = createShardObserver(PREFIX, () => t * STEP_MS);
  let ring: Ring = createRing([]);
  let unknown = new Set<string>();
  let epoch = 0;
  let queued: Patch[] = [];
  let flying: Patch[] = [];
  let passEpoch = -1;
  let passRing: Ring | undefined;
  let staleBy = 0;
  let stall = 0;
  let toAck: string[] = [];

  const asList = (m: Map<string, LeaseRec>): ShardLease[] =>
    [...m.entries()].map(([id, l]) => ({
      metadata: {
        name: `${PREFIX}${id}`,
        resourceVersion: String(l.rv),
        annotations: {
          "shard.keyward.dev/incarnation": l.incarnation,
          ...(l.joined !== undefined ? { "shard.keyward.dev/joined": l.joined } : {}),
        },
      },
      spec: { holderIdentity: l.holder, renewTime: l.renew, leaseDurationSeconds: (DURATION * STEP_MS) / 1000 },
    }));
  const holds = (r: Replica): boolean => r.alive && r.held && !r.taken && t - r.lastSent < DEADLINE;
  const endActions = (r: Replica, at: number): void => {
    for (const [key, a] of r.inFlight) actions.get(key)?.push({ r: r.id, from: a.from, to: Math.min(a.until, at) });
    r.inFlight.clear();
  };

  const expanded: Op[] = ops.flatMap((o): Op[] => {
    if (o.op === "restart")
      return [
        { at: o.at, op: "kill", r: o.r },
        { at: o.at + o.after, op: "start", r: o.r },
      ];
    if (o.op === "restartDuringStall")
      return [
        { at: o.at, op: "kill", r: o.r },
        { at: o.at + 1, op: "stallPass", steps: o.stall },
        { at: o.at + o.after, op: "start", r: o.r },
      ];
    return [o];
  });
  let listedUpTo = 0;
  let noneLiveAt = 0;
  for (t = 0; t < STEPS; t++) {
    for (const o of expanded.filter((x) => x.at === t)) {
      const id = "r" in o ? (IDS[o.r] ?? "r0") : "";
      const r = replicas.get(id);
      if (o.op === "kill" && r?.alive) {
        endActions(r, t);
        r.alive = false;
        r.diedAt = t;
      } else if (o.op === "stop" && r?.alive) {
        // A graceful stop: passes end, then the Lease is released.
        endActions(r, t);
        r.alive = false;
        r.diedAt = t;
        const l = leases.get(id);
        if (l && l.holder === id && r.held && !r.taken)
          leases.set(id, { ...l, holder: "", renew: `rel-${String(++counter)}`, rv: l.rv + 1 });
      } else if (o.op === "start" && !r?.alive) replicas.set(id, fresh(id));
      else if (o.op === "delayRenew" && r) r.renewBlockedUntil = t + o.steps;
      else if (o.op === "staleList") staleBy = o.steps;
      else if (o.op === "stallPass") stall = o.steps;
      else if (o.op === "newLeader") {
        observer = createShardObserver(PREFIX, () => t * STEP_MS);
        ring = createRing([]);
        unknown = new Set();
        queued = [];
        flying = flying.filter((p) => p.landsAt <= t); // the old leader fenced itself; what it sent lands
        toAck = [];
      }
    }

    // Replicas: renew (fence rules of lease.ts), start, act, release drained objects.
    for (const r of replicas.values()) {
      if (!r.alive) continue;
      if (r.held && t - r.lastSent >= DEADLINE) {
        endActions(r, r.lastSent + DEADLINE);
        r.alive = false; // the process exits at its renew deadline
        r.diedAt = t;
        continue;
      }
      if (t >= r.nextRenew && t >= r.renewBlockedUntil) {
        r.nextRenew = t + RETRY;
        const l = leases.get(r.id);
        if (r.sent.length > 0 && !(l?.holder === r.id && r.sent.includes(l.renew))) {
          r.taken = true;
          endActions(r, t);
          r.alive = false;
          r.diedAt = t;
          continue;
        }
        if (!l || l.holder === "" || l.holder === r.id) {
          const renew = `${r.id}@${String(++counter)}`;
          r.sent.push(renew);
          leases.set(r.id, {
            holder: r.id,
            renew,
            rv: (l?.rv ?? 0) + 1,
            incarnation: r.incarnation,
            ...(l?.joined !== undefined ? { joined: l.joined } : {}),
          });
          if (!r.held) r.joinedAt = t;
          r.held = true;
          r.lastSent = t;
        }
      }
      if (!r.started && r.held) {
        const joined = leases.get(r.id)?.joined === r.incarnation;
        r.started = rejoin === "handshake" ? joined : t >= r.joinedAt + DURATION + RETRY;
      }
      for (const [key, a] of r.inFlight) {
        if (a.until <= t) {
          actions.get(key)?.push({ r: r.id, from: a.from, to: a.until });
          r.inFlight.delete(key);
        }
      }
      if (!r.started || !holds(r)) continue;
      for (const [key, o] of objects) {
        if (o.owner !== r.id || r.inFlight.has(key)) continue;
        if (o.drain) {
          objects.set(key, { drain: false, rv: o.rv + 1 }); // released on the version read
          continue;
        }
        const h = mix(t, key, r.id);
        if (h % 4 === 0) {
          if (!actions.has(key)) actions.set(key, []);
          r.inFlight.set(key, { from: t, until: t + 1 + ((h >>> 3) % 8) });
        }
      }
    }

    // The leader: patches land; every retry period a Lease list (maybe stale), takeovers, acks, a pass.
    for (const p of flying.filter((x) => x.landsAt <= t)) {
      const o = objects.get(p.key);
      if (!o || o.rv !== p.rv) continue; // a 409
      const c = p.change;
      objects.set(
        p.key,
        c.change === "assign" ? { owner: c.to, drain: false, rv: o.rv + 1 } : { ...o, drain: c.change === "drain", rv: o.rv + 1 },
      );
    }
    flying = flying.filter((x) => x.landsAt > t);
    history.push(new Map([...leases.entries()].map(([k, v]) => [k, { ...v }])));
    if (t % RETRY === 0) {
      // A slow list reflects an older state, but lists are sequential: never older than the last one.
      listedUpTo = Math.max(listedUpTo, history.length - 1 - staleBy);
      const snapshot = history[listedUpTo] ?? new Map<string, LeaseRec>();
      staleBy = 0;
      const items = asList(snapshot);
      const view = observer.view(items);
      if (view.live.join() !== ring.members.join()) ring = createRing(view.live);
      const known = new Set([...view.live, ...view.unknown]);
      const kept: string[] = [];
      for (const item of items) {
        const id = (item.metadata?.name ?? "").slice(PREFIX.length);
        if (item.spec?.holderIdentity !== id || known.has(id)) continue;
        const now = leases.get(id);
        if (now && String(now.rv) === item.metadata?.resourceVersion) leases.set(id, { ...now, holder: "", rv: now.rv + 1 });
        else kept.push(id);
      }
      unknown = new Set([...view.unknown, ...kept]);
      if (rejoin === "handshake") {
        const joining = items.filter((l) => joinPending(l) !== undefined);
        if (joining.length > 0) {
          epoch++;
          toAck = joining.map((l) => (l.metadata?.name ?? "").slice(PREFIX.length) + "\u0000" + (joinPending(l) ?? ""));
        }
      }
    }
    // A pass stops sending when membership or the epoch changed; a join is acknowledged once the pass planned before it has ended.
    if (passRing !== ring || passEpoch !== epoch) queued = [];
    if (toAck.length > 0 && queued.length === 0 && flying.length === 0) {
      for (const entry of toAck) {
        const [id, incarnation] = entry.split("\u0000") as [string, string];
        const l = leases.get(id);
        if (l && l.incarnation === incarnation) leases.set(id, { ...l, joined: incarnation, rv: l.rv + 1 });
      }
      toAck = [];
    }
    if (queued.length === 0 && flying.length === 0 && toAck.length === 0 && t % 2 === 0) {
      const list = [...objects.entries()].map(([key, o]) => ({ key, owner: o.owner, draining: o.drain }));
      // The sharder's shares: the ring with bounded loads over the namespaces that hold objects.
      const shares = boundLoads(ring, new Set(list.map((o) => shardKey({ metadata: { namespace: o.key.split("/")[0], name: "o" } }))));
      const ownerOf = (key: string): string | undefined =>
        shares.ownerOf(shardKey({ metadata: { namespace: key.split("/")[0], name: "o" } }));
      const changes = shardChanges(list, ownerOf, new Set(ring.members), unknown);
      passRing = ring;
      passEpoch = epoch;
      // A stall holds the next pass that has something to send.
      const landsIn = stall > 0 && changes.length > 0 ? stall : 1;
      if (changes.length > 0) stall = 0;
      queued = changes.map((change) => ({ key: change.key, change, rv: objects.get(change.key)?.rv ?? 0, epoch, landsAt: t + landsIn }));
    }
    trace?.push(
      `${String(t)} ring=${ring.members.join(",")} q=${String(queued.length)} f=${String(flying.length)} ` +
        [...replicas.values()].map((r) => `${r.id}:${r.alive ? (r.started ? "S" : r.held ? "H" : "-") : "x"}`).join(" ") +
        " " +
        [...objects.values()].map((o) => o.owner ?? "?").join(""),
    );
    // Up to 8 patches in flight.
    while (flying.length < 8 && queued.length > 0) flying.push(queued.shift() as Patch);

    // No object labelled for a dead replica beyond the bound.
    // Counted from the death, or from when a live replica was there again to take the object.
    const bound = 2 * DURATION + 6 * RETRY + 60 + 40 + 30;
    if (![...replicas.values()].some((r) => r.alive && r.started)) noneLiveAt = t;
    for (const [key, o] of objects) {
      const owner = o.owner ? replicas.get(o.owner) : undefined;
      if (owner && !owner.alive && owner.diedAt !== undefined && t - Math.max(owner.diedAt, noneLiveAt) > bound)
        return `${key} still labelled for ${owner.id}, dead since step ${String(owner.diedAt)}, at step ${String(t)}`;
    }
  }
  for (const r of replicas.values()) endActions(r, t);
  trace?.push(...[...actions].map(([k, l]) => `${k}: ${l.map((a) => `${a.r}[${String(a.from)},${String(a.to)})`).join(" ")}`));

  for (const [key, list] of actions) {
    const sorted = [...list].sort((a, b) => a.from - b.from);
    for (let i = 0; i < sorted.length; i++) {
      for (let j = i + 1; j < sorted.length; j++) {
        const a = sorted[i];
        const b = sorted[j];
        if (a && b && a.r !== b.r && b.from < a.to)
          return `${key}: ${a.r} acted over [${String(a.from)}, ${String(a.to)}), ${b.r} from ${String(b.from)}`;
      }
    }
  }
  return undefined;
}

const seed = process.env["KEYWARD_RACE_SEED"] ? Number(process.env["KEYWARD_RACE_SEED"]) : undefined;
const numRuns = Number(process.env["KEYWARD_RACE_RUNS"] ?? 300);
const schedules = fc.array(opArb, { minLength: 1, maxLength: 14 });

describe("the sharding protocol under a seeded race", () => {
  it(
    "never lets two replicas act on one object at once, and no object waits on a dead replica past the bound",
    { timeout: 110_000 },
    () => {
      const result = fc.check(
        fc.property(schedules, (ops) => runSchedule(ops, "handshake") === undefined),
        { numRuns, ...(seed !== undefined ? { seed } : {}) },
      );
      if (result.failed) {
        const ops = result.counterexample?.[0] ?? [];
        console.error(
          `race seed ${String(result.seed)} (replay: KEYWARD_RACE_SEED=${String(result.seed)}): ${runSchedule(ops, "handshake") ?? ""}\n${JSON.stringify(ops)}`,
        );
      }
      expect(result.failed).toBe(false);
    },
  );

  it("finds the overlap of the rejoin timer the handshake replaced (the race can fail)", { timeout: 110_000 }, () => {
    const result = fc.check(
      fc.property(schedules, (ops) => runSchedule(ops, "timer") === undefined),
      // A fixed seed (it finds the overlap within 300 schedules): this test shows the race can fail, deterministically.
      { numRuns: 300, seed: -592050616 },
    );
    if (result.failed)
      console.info(
        `timer rejoin broken by seed ${String(result.seed)}: ${runSchedule(result.counterexample?.[0] ?? [], "timer") ?? ""}\n${JSON.stringify(result.counterexample?.[0])}`,
      );
    expect(result.failed).toBe(true);
  });
});
