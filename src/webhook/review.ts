// The answer to an apiextensions.k8s.io/v1 ConversionReview: every object converted, or the whole
// review refused (result.status Failure, a message naming the object and the field), never some
// objects converted and others not. Pure; server.ts reads the body and writes the answer.
//
// The body is hostile input: the apiserver is the only legitimate caller, but the port is
// reachable from the cluster network. Its shape is checked before any object is converted, and
// the answer and what the caller logs (ReviewOutcome) carry field names and object names only,
// never a value from an object.
import { ConversionError, convert, type ConvertibleObject } from "../resources/conversion.ts";
import type { Kind } from "../resources/kind.ts";
import { kinds as registry } from "../resources/registry.ts";

const REVIEW_API_VERSION = "apiextensions.k8s.io/v1";
/** The apiserver's uids are UUIDs; anything longer is not one of its reviews. */
const MAX_UID_LENGTH = 128;
/** Longest message a refusal carries: field paths and names, never a whole value. */
const MAX_MESSAGE_LENGTH = 1024;

export interface ConversionReviewResponse {
  apiVersion: typeof REVIEW_API_VERSION;
  kind: "ConversionReview";
  response: {
    uid: string;
    convertedObjects?: ConvertibleObject[];
    result: { status: "Success" } | { status: "Failure"; message: string };
  };
}

/** What the server logs of a review: counts, kinds and the refused field, nothing of the objects' contents. */
export interface ReviewOutcome {
  /** The HTTP status to answer with: 200 for any review (a Failure result too), 400 for a body that is not one. */
  httpStatus: 200 | 400;
  body: ConversionReviewResponse | { message: string };
  objects: number;
  desiredAPIVersion?: string;
  /** The field a refused review names (`spec.destination`, `apiVersion`, `request.uid`). */
  refusedField?: string;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function clip(text: string): string {
  return text.length <= MAX_MESSAGE_LENGTH ? text : `${text.slice(0, MAX_MESSAGE_LENGTH - 1)}…`;
}

/** `SecretSync payments/to-github`, from fields checked to be short strings; else the index alone. */
function nameOf(obj: Obj, index: number): string {
  const meta = isObj(obj["metadata"]) ? obj["metadata"] : {};
  const short = (v: unknown): string | undefined => (typeof v === "string" && v.length <= 253 ? v : undefined);
  const name = short(meta["name"]);
  const namespace = short(meta["namespace"]);
  const kind = short(obj["kind"]);
  const who = name ? `${kind ?? "object"} ${namespace ? `${namespace}/` : ""}${name}` : undefined;
  return who ? `objects[${index}] (${who})` : `objects[${index}]`;
}

function refuse(uid: string, objects: number, desired: string | undefined, field: string, message: string): ReviewOutcome {
  return {
    httpStatus: 200,
    body: {
      apiVersion: REVIEW_API_VERSION,
      kind: "ConversionReview",
      response: { uid, result: { status: "Failure", message: clip(message) } },
    },
    objects,
    ...(desired !== undefined ? { desiredAPIVersion: desired } : {}),
    refusedField: field,
  };
}

function malformed(message: string): ReviewOutcome {
  return { httpStatus: 400, body: { message }, objects: 0 };
}

/** One object of a review in `version` of `group`, or the field and message refusing it. */
function convertOne(
  obj: unknown,
  index: number,
  group: string,
  version: string,
  served: readonly Kind[],
): { converted: ConvertibleObject } | { field: string; message: string } {
  if (!isObj(obj)) return { field: "<root>", message: `objects[${index}]: must be an object` };
  const who = nameOf(obj, index);
  const apiVersion = obj["apiVersion"];
  if (typeof apiVersion !== "string" || apiVersion.slice(0, apiVersion.lastIndexOf("/")) !== group) {
    return { field: "apiVersion", message: `${who}: apiVersion: must be a version of ${group}` };
  }
  const kind = served.find((k) => k.ref.kind === obj["kind"] && k.ref.group === group);
  if (!kind) return { field: "kind", message: `${who}: kind: not a kind this webhook converts` };
  const from = apiVersion.slice(apiVersion.lastIndexOf("/") + 1);
  const versions = [kind.conversion.from, kind.conversion.to];
  if (!versions.includes(version) || !versions.includes(from)) {
    return { field: "apiVersion", message: `${who}: apiVersion: ${kind.ref.kind} is served as ${versions.join(" and ")}` };
  }
  try {
    return { converted: convert(obj as ConvertibleObject, version, served) };
  } catch (err) {
    // A ConversionError names the field; anything else is a shape the conversion did not expect,
    // and its message (a TypeError's, say) is not ours to pass on.
    if (err instanceof ConversionError) return { field: err.field, message: `${who}: ${err.message}` };
    return { field: "<root>", message: `${who}: cannot be converted to ${version}` };
  }
}

/**
 * The answer to a parsed ConversionReview body. `served` are the kinds this webhook converts
 * (keyward's registry; tests pass the same kinds in a group of their own).
 */
export function reviewConversion(review: unknown, served: readonly Kind[] = registry): ReviewOutcome {
  if (!isObj(review) || review["apiVersion"] !== REVIEW_API_VERSION || review["kind"] !== "ConversionReview") {
    return malformed(`not a ${REVIEW_API_VERSION} ConversionReview`);
  }
  const request = review["request"];
  if (!isObj(request)) return malformed("request: must be an object");
  const uid = request["uid"];
  if (typeof uid !== "string" || uid.length === 0 || uid.length > MAX_UID_LENGTH) {
    return malformed(`request.uid: must be a string of 1 to ${MAX_UID_LENGTH} characters`);
  }
  const objects = request["objects"];
  const count = Array.isArray(objects) ? objects.length : 0;
  const desired = request["desiredAPIVersion"];
  if (typeof desired !== "string" || !/^[a-z0-9.-]{1,253}\/[a-z0-9]{1,63}$/.test(desired)) {
    return refuse(uid, count, undefined, "request.desiredAPIVersion", "request.desiredAPIVersion: must be <group>/<version>");
  }
  if (!Array.isArray(objects)) return refuse(uid, 0, desired, "request.objects", "request.objects: must be a list");
  const slash = desired.lastIndexOf("/");
  const group = desired.slice(0, slash);
  const version = desired.slice(slash + 1);
  const converted: ConvertibleObject[] = [];
  for (const [index, obj] of objects.entries()) {
    const one = convertOne(obj, index, group, version, served);
    if ("field" in one) return refuse(uid, count, desired, one.field, one.message);
    converted.push(one.converted);
  }
  return {
    httpStatus: 200,
    body: {
      apiVersion: REVIEW_API_VERSION,
      kind: "ConversionReview",
      response: { uid, convertedObjects: converted, result: { status: "Success" } },
    },
    objects: count,
    desiredAPIVersion: desired,
  };
}
