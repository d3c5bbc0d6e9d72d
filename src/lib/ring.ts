// The consistent-hash ring keyward's sharding assigns objects with. keyward runs N active
// replicas; each holds one shard Lease, and the live Leases are the ring's members (the design of
// timebertt/kubernetes-controller-sharding). The leader's sharder builds the ring from the Lease
// list and asks it who owns an object (the key is a string the caller builds: keyward's is the
// namespace), and a new leader must come to the same answers from the same list: the owner
// depends only on the set of members and the key — not on their order, not on the process (no
// Math.random, no per-process seeded hashing). With few keys a plain ring's shares are uneven, so
// the sharder bounds them (boundLoads, below), a function of the members and the key set alone.
//
// Why a consistent-hash ring and not hash(key) mod N: when a replica joins or leaves, mod N moves
// almost every key (N/(N+1) of them on a join), so every replica would drop and re-take nearly
// every object at each rollout. On a ring a join moves only the keys the newcomer takes over,
// about 1/(N+1), and only to the newcomer; a leave moves only the leaver's keys.
//
// Why virtual nodes: with one point per member the arcs between points are very unequal (the
// largest is about ln N / N of the ring), and a leaver's whole share falls onto its one successor.
// With V points per member each share is the sum of V arcs, so it evens out (spread roughly
// 1/sqrt(V) of the fair share), and a leaver's keys scatter over all survivors. Why 500 and not
// the usual 100: measured over 200 random sets of 8 pod-like names and 10,000 keys, the
// worst-served member's deviation from 1/N was 17% median, 27% p95, 42% max at 100 points, and
// 9% median, 13% p95, 18% max at 500. 500 points cost nothing that matters: 4,000 points (about
// 50 KB) for 8 replicas, a few ms to build when a Lease comes or goes, lookups about 1 µs.
//
// Why MurmurHash3 (x86, 32-bit): it is specified byte for byte (the same value in every language
// and process, checked against the published test vectors), well distributed (passes SMHasher),
// and fast in plain JS with Math.imul — no BigInt (FNV-1a 64 would need it), no dependency, no
// node:crypto round trip. 32 bits are enough: a ring has a few thousand points, and a point
// collision (two members' points on the same value) is resolved deterministically. Keys and
// member names are hashed over their UTF-8 bytes.
//
// Changing the hash, the point labels or the default number of virtual nodes changes owners:
// replicas of two keyward versions with different rings would disagree during a rollout. The
// unit test pins a few owners so such a change is deliberate.

/** Points per member unless the caller says otherwise. */
export const DEFAULT_VIRTUAL_NODES = 500;

export interface RingOptions {
  /** Points per member on the ring (a positive integer); DEFAULT_VIRTUAL_NODES by default. */
  virtualNodes?: number;
}

export interface Ring {
  /** The members, deduplicated and sorted (code-unit order). */
  readonly members: readonly string[];
  /** The member owning `key`; undefined only when the ring has no members. */
  ownerOf(key: string): string | undefined;
  /** Every member once, in the order met walking clockwise from `key`'s point: its owner first. */
  successors(key: string): Generator<string, void, undefined>;
}

const utf8 = new TextEncoder();

// A member's index shares a double with a 32-bit point (see createRing), so at most 2^21 members;
// the same bound on points (about two million, far beyond any real ring: 32 replicas × 500 is
// 16,000) keeps a typo in virtualNodes from allocating gigabytes.
const MEMBER_SLOTS = 2 ** 21;
const MAX_POINTS = MEMBER_SLOTS;

/** MurmurHash3 x86_32 of `input` (a string is hashed over its UTF-8 bytes), as an unsigned 32-bit number. */
export function murmur3(input: string | Uint8Array, seed = 0): number {
  const bytes = typeof input === "string" ? utf8.encode(input) : input;
  const length = bytes.length;
  const blockEnd = length - (length & 3);
  let h = seed | 0;
  for (let i = 0; i < blockEnd; i += 4) {
    const k = (bytes[i] ?? 0) | ((bytes[i + 1] ?? 0) << 8) | ((bytes[i + 2] ?? 0) << 16) | ((bytes[i + 3] ?? 0) << 24);
    h ^= mixK(k);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const rest = length & 3;
  if (rest > 0) {
    let k = bytes[blockEnd] ?? 0;
    if (rest > 1) k |= (bytes[blockEnd + 1] ?? 0) << 8;
    if (rest > 2) k |= (bytes[blockEnd + 2] ?? 0) << 16;
    h ^= mixK(k);
  }
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function mixK(k: number): number {
  let m = Math.imul(k, 0xcc9e2d51);
  m = (m << 15) | (m >>> 17);
  return Math.imul(m, 0x1b873593);
}

/**
 * A ring over `members` (duplicates count once; order does not matter). Member m's points are
 * murmur3("m#0") … murmur3("m#V-1"); a key belongs to the first point at or after murmur3(key),
 * wrapping around. Building costs O(N·V log(N·V)), a lookup O(log(N·V)).
 */
export function createRing(members: readonly string[], opts: RingOptions = {}): Ring {
  const virtualNodes = opts.virtualNodes ?? DEFAULT_VIRTUAL_NODES;
  if (!Number.isInteger(virtualNodes) || virtualNodes < 1) {
    throw new RangeError(`virtualNodes must be a positive integer, got ${String(virtualNodes)}`);
  }
  const sorted = Object.freeze([...new Set(members)].sort(byCodeUnits));
  if (sorted.length * virtualNodes > MAX_POINTS) {
    throw new RangeError(`a ring of ${sorted.length} members × ${virtualNodes} virtual nodes exceeds ${MAX_POINTS} points`);
  }
  // Each point packed with its member's index (point · 2^21 + index < 2^53, exact in a double),
  // so one native numeric sort orders by point, and ties (two labels hashing alike) by member
  // name, which does not depend on the input order: the first owns the point, the other is shadowed.
  const packed = new Float64Array(sorted.length * virtualNodes);
  sorted.forEach((name, member) => {
    // "name#i" is unambiguous: i is all digits, so the last '#' splits any label back apart.
    for (let i = 0; i < virtualNodes; i++) packed[member * virtualNodes + i] = murmur3(`${name}#${i}`) * MEMBER_SLOTS + member;
  });
  packed.sort();
  const points = Uint32Array.from(packed, (p) => Math.floor(p / MEMBER_SLOTS));
  const owners = Array.from(packed, (p) => sorted[p % MEMBER_SLOTS] ?? "");

  return {
    members: sorted,
    ownerOf(key: string): string | undefined {
      if (points.length === 0) return undefined;
      const index = firstAtOrAfter(points, murmur3(key));
      return owners[index === points.length ? 0 : index];
    },
    *successors(key: string) {
      const seen = new Set<string>();
      const start = firstAtOrAfter(points, murmur3(key));
      for (let step = 0; step < points.length && seen.size < sorted.length; step++) {
        const owner = owners[(start + step) % points.length] ?? "";
        if (seen.has(owner)) continue;
        seen.add(owner);
        yield owner;
      }
    },
  };
}

/**
 * How far above the fair share (keys ÷ members) boundLoads lets one member go. Measured over 100
 * fixed random sets, namespaces as keys (the plain ring's figures after the arrows): 40 keys over
 * 4 members, the fullest member holds 11 (→ 13 median, 15 p95, 19 at worst); a join moves 11
 * keys median (→ 8, the newcomer's share); a key added or removed moves 1 other median, 3 p95,
 * 5 at most over 8 to 48 keys (→ 0). With 1,000 keys the ring is within the slack already and
 * little changes (fullest 270 of a fair 250 either way, at most 275 here against 292). No slack
 * (every member at most ⌈keys ÷ members⌉) moved twice as many per key added or removed; 25%
 * (HAProxy's default) left 12 of 40 on one member.
 */
export const DEFAULT_LOAD_SLACK = 0.1;

/**
 * The ring with bounded loads (Mirrokni, Thorup and Zadimoghaddam, "Consistent Hashing with
 * Bounded Loads", 2018; HAProxy's hash-balance-factor): each of `keys` goes to its ring owner
 * unless that member already holds its cap, then to the next member clockwise with room. The
 * cap is ⌈keys ÷ members⌉, or (1 + slack) × keys ÷ members rounded down when that is more, so no
 * member takes more than its share and the slack however the keys hash: a few keys over a few
 * members are as even as they can be, where the plain ring can give one member half of them.
 * Keys are placed in the order of their points (ties by code units), so the result depends on the
 * members and the key set only, not on the caller's order. A key not in `keys` gets its plain
 * ring owner. Costs O(keys × members) walking the ring, plus a sort.
 */
export function boundLoads(ring: Ring, keys: Iterable<string>, slack = DEFAULT_LOAD_SLACK): Ring {
  if (!(slack >= 0)) throw new RangeError(`slack must be ≥ 0, got ${String(slack)}`);
  const members = ring.members.length;
  const placed = new Map<string, string>();
  if (members > 0) {
    const ordered = [...new Set(keys)].map((key) => ({ key, point: murmur3(key) }));
    ordered.sort((a, b) => a.point - b.point || byCodeUnits(a.key, b.key));
    const cap = Math.max(Math.ceil(ordered.length / members), Math.floor((ordered.length * (1 + slack)) / members));
    const load = new Map<string, number>();
    for (const { key } of ordered) {
      // The key's owner first; cap × members ≥ keys, so some member always has room.
      for (const member of ring.successors(key)) {
        const held = load.get(member) ?? 0;
        if (held < cap) {
          placed.set(key, member);
          load.set(member, held + 1);
          break;
        }
      }
    }
  }
  return {
    members: ring.members,
    ownerOf: (key) => placed.get(key) ?? ring.ownerOf(key),
    successors: (key) => ring.successors(key),
  };
}

/** Index of the first element ≥ value in the ascending `points`, or points.length if none. */
function firstAtOrAfter(points: Uint32Array, value: number): number {
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((points[mid] ?? 0) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
