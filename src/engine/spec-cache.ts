// A spec is validated once per generation, not once per pass. A resync or requeue pass of an
// unchanged object would otherwise run its zod schema again (a few percent of keyward's CPU in
// steady state, bench/RESULTS.md), though the apiserver bumps metadata.generation on every spec
// change of a custom resource: the same UID and generation is the same spec. A refused spec is
// kept too (the same issues are reported without parsing again) until the next generation.
import { keyString } from "../kube/keys.ts";
import type { ObjectKey, ObjectMeta } from "./types.ts";

export interface SpecCache<Spec> {
  /**
   * The parse of `obj.spec`, from the cache when this object (UID) at this generation was parsed
   * before; a parse that threw throws the same error again. An object without a UID or a
   * generation is parsed every time. The value is shared between passes: callers never mutate it.
   */
  parse(obj: { metadata: ObjectMeta; spec?: unknown }): Spec;
  /** The object is gone (or no longer this replica's): drop its entry. */
  forget(key: ObjectKey): void;
  size(): number;
}

type Entry<Spec> = { uid: string; generation: number } & ({ ok: true; spec: Spec } | { ok: false; error: unknown });

export function createSpecCache<Spec>(parse: (raw: unknown) => Spec): SpecCache<Spec> {
  const entries = new Map<string, Entry<Spec>>();
  return {
    parse(obj) {
      const { uid, generation } = obj.metadata;
      if (uid === undefined || uid === "" || generation === undefined) return parse(obj.spec);
      const key = keyString(obj.metadata);
      const hit = entries.get(key);
      if (hit && hit.uid === uid && hit.generation === generation) {
        if (hit.ok) return hit.spec;
        throw hit.error;
      }
      try {
        const spec = parse(obj.spec);
        entries.set(key, { uid, generation, ok: true, spec });
        return spec;
      } catch (error) {
        entries.set(key, { uid, generation, ok: false, error });
        throw error;
      }
    },
    forget(key) {
      entries.delete(keyString(key));
    },
    size: () => entries.size,
  };
}
