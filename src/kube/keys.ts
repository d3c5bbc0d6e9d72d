// An object's key (namespace and name) and its one text form, "namespace/name": work-queue keys,
// cache and map keys, and how messages and logs name an object. A cluster-scoped object has
// namespace "" and the text "/name".
import type { ObjectKey } from "./types.ts";

/** A key, or an object's metadata: no namespace means a cluster-scoped object. */
interface Keyed {
  namespace?: string | undefined;
  name: string;
}

/** The key of an object; "" as namespace when it has none (a cluster-scoped object). */
export function keyOf(obj: { metadata: Keyed }): ObjectKey {
  return { namespace: obj.metadata.namespace ?? "", name: obj.metadata.name };
}

/** "namespace/name" of a key or of an object's metadata ("/name" for a cluster-scoped object). */
export function keyString(key: Keyed): string {
  return `${key.namespace ?? ""}/${key.name}`;
}

/** The key keyString wrote; text without a slash is the name of a cluster-scoped object. */
export function parseKeyString(text: string): ObjectKey {
  const slash = text.indexOf("/");
  return slash < 0 ? { namespace: "", name: text } : { namespace: text.slice(0, slash), name: text.slice(slash + 1) };
}
