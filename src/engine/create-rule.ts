// The create rule: one external object per resource, for a kind whose id the service assigns.
// Its states, and the only transitions keyward makes between them:
//
//   NotStarted ──mark written──▶ Started ──id recorded──▶ Confirmed
//        ▲                          │
//        └── refused, and no ───────┘   (the mark goes only when every attempt's outcome is known)
//            earlier attempt
//
// - NotStarted: no create-started mark of this object, no id. A pass looks the object up by its
//   natural key (slug, name in project); found, it is someone's (adopted by policy, through the
//   claim rule, holder.ts); absent, the pass writes the mark (on the version it read), then calls.
// - Started: a mark of this object's own UID, no id: some attempt's outcome is unknown (a timeout,
//   a lost answer, a crash). A pass looks the object up by its natural key; found, it is this
//   resource's (still through the claim rule: a same-named object of another may be what it
//   found); absent, it may call again — the service keeps natural keys unique, so a late commit of
//   the earlier attempt and this one cannot both land.
// - Confirmed: the id is recorded in status (and in keyward.dev/external-id, unless the natural key
//   the mark's write announced names the object by itself: holder.ts). The mark stays as a record
//   of when, and for a kind whose natural key names its object, of which object it is: a copy
//   carrying it (copiedCreate) claims the object of its key.
//
// Being deleted while Started, the resource is released only once the mark is
// LATE_COMMIT_WINDOW_MS old, looking by the natural key until then: an attempt the service applies
// late is then found and deleted. Also after it found and deleted one: that was one attempt's
// commit, and a later attempt (sent while the first had not landed yet) may commit once the key
// is free again.
//
// A natural key inside a parent (a sync's name in its project) is looked up, while Started, in the
// parent the attempt was sent to: the mark records it (its scope). Being deleted, the resource
// naming the parent may be gone already (a Project deleted with its syncs), and only the mark
// still says where a late commit lands.
//
// A refused attempt (a 4xx, keyward's own rate limit, nothing sent) settles only its own outcome:
// the mark goes when the pass began NotStarted, and stays when it began Started, since the earlier
// attempt may still commit (a service that holds a request past keyward's timeout).

/** When keyward started a create whose id the service assigns, and on which object (its UID). */
export const ANNOTATION_CREATE_STARTED = "keyward.dev/create-started";
/** The marks of keywards before create-started (a pending mark removed again once the create succeeded); still honoured. */
export const LEGACY_CREATE_PENDING = "keyward.dev/create-pending";
export const LEGACY_CREATE_SUCCEEDED = "keyward.dev/create-succeeded";
/** Every annotation of the create guard: keyward's own writes, never a reason to reconcile. */
export const CREATE_GUARD_ANNOTATIONS = [ANNOTATION_CREATE_STARTED, LEGACY_CREATE_PENDING, LEGACY_CREATE_SUCCEEDED] as const;

export type CreateState = "NotStarted" | "Started" | "Confirmed";

/**
 * The create-started mark's value: when, the UID of the object it was written on, and the scope
 * the create is sent to (a parent's id, URI-encoded), if the kind has one. A copy of the object (a
 * manifest exported and applied again, a restore) carries the mark with another UID and no status:
 * that copy never created anything, so its mark does not count.
 */
export function createStartedMark(at: Date, uid: string | undefined, scope?: string): string {
  return [at.toISOString(), uid ?? "", ...(scope ? [encodeURIComponent(scope)] : [])].join(" ").trimEnd();
}

/**
 * The scope this object's own create-started mark records: where an attempt whose outcome is
 * unknown was sent. Undefined for a mark of another UID, a mark without one (a kind without a
 * scope, a keyward before scopes) or one that does not decode.
 */
export function createScope(annotations: Readonly<Record<string, string>>, uid: string | undefined): string | undefined {
  const [, markUid, scope] = annotations[ANNOTATION_CREATE_STARTED]?.split(" ") ?? [];
  if (uid === undefined || markUid !== uid || !scope) return undefined;
  try {
    return decodeURIComponent(scope);
  } catch {
    return undefined;
  }
}

const hasId = (id: unknown): boolean => id !== undefined && id !== null && id !== "";

/** The UID the create-started mark names (createStartedMark), if there is a mark. */
const markUid = (annotations: Readonly<Record<string, string>>): string | undefined =>
  annotations[ANNOTATION_CREATE_STARTED]?.split(" ")[1];

/** The state of an object's create: its annotations, the id it records, its UID. */
export function createState(annotations: Readonly<Record<string, string>>, id: unknown, uid: string | undefined): CreateState {
  if (hasId(id)) return "Confirmed";
  const ours = uid !== undefined && markUid(annotations) === uid;
  const started = ours || annotations[LEGACY_CREATE_PENDING] !== undefined;
  return started && annotations[LEGACY_CREATE_SUCCEEDED] === undefined ? "Started" : "NotStarted";
}

/**
 * A create-started mark of another object (another UID) and no id: this object is a copy (a backup
 * restored, a manifest read and applied again) of one that created, or was creating, the object of
 * its natural key. Its own state is NotStarted (it created nothing); for a kind whose natural key
 * names its object (holder.ts), that object is its to claim, as an id in metadata would be.
 */
export function copiedCreate(annotations: Readonly<Record<string, string>>, id: unknown, uid: string | undefined): boolean {
  const marked = markUid(annotations);
  return !hasId(id) && uid !== undefined && marked !== undefined && marked !== uid;
}

/** A create was started and not confirmed (Started): an object found by the natural key is this resource's. */
export function createUnconfirmed(annotations: Readonly<Record<string, string>>, id: unknown, uid: string | undefined): boolean {
  return createState(annotations, id, uid) === "Started";
}

/**
 * What happens to the mark when an attempt fails. `began` is the state the pass started from;
 * `mayHaveLanded` whether this attempt may have reached the service. The mark goes only when no
 * attempt's outcome is unknown any more: this one was refused and there was no earlier one.
 */
export function markAfterFailure(began: CreateState, mayHaveLanded: boolean): "keep" | "remove" {
  return began === "NotStarted" && !mayHaveLanded ? "remove" : "keep";
}

/**
 * The service answered a create with "already exists" (its natural key is taken). Began Started,
 * the object may be an earlier attempt's late commit: looked up again by the next pass, it is
 * this resource's if the claim rule lets it hold it. Began NotStarted, this attempt's answer is
 * known and the object is another's: adopted only as the creation policy allows.
 */
export function duplicateAnswer(began: CreateState): "look-again" | "another's" {
  return began === "Started" ? "look-again" : "another's";
}

/**
 * How long after its create-started mark an attempt whose outcome is unknown may still commit: a
 * service can finish a request it received after keyward stopped waiting for it (the request
 * timeouts are at most 30 s under the chart's default ceiling).
 */
export const LATE_COMMIT_WINDOW_MS = 60_000;

/**
 * Being deleted while Started, with nothing found by the natural key: an attempt may still commit
 * within the window, and releasing the resource then would leave what it commits behind. Waits the
 * rest of the window (ms), else releases. A mark whose time cannot be read releases.
 */
export function releaseWhileStarted(mark: string | undefined, now: number): { wait: number } | "release" {
  const at = Date.parse(mark?.split(" ")[0] ?? "");
  const wait = Number.isFinite(at) ? at + LATE_COMMIT_WINDOW_MS - now : 0;
  return wait > 0 ? { wait } : "release";
}
