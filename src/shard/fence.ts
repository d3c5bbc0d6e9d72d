// The fence of a sharded replica (docs/sharding.md): while it does not hold its shard Lease —
// not renewed within its deadline, or taken over by the leader — nothing it sends may land. The
// operator's clients are made with it: the apiserver access refuses every request other than a
// GET (fenceKube), the service clients every call (the connector's `admit`: holds itself). The
// shard Lease's own renewals and the sharder's patches go through another access.
import type { KubeAccess } from "../kube/kubeconfig.ts";

/** A write refused unsent by the fence. */
export class KubeFencedError extends Error {
  override readonly name = "KubeFencedError";
  constructor(method: string, path: string) {
    super(`${method} ${path}: not sent: this replica no longer holds its shard Lease`);
  }
}

/** A copy of `access` (same connections and credential) whose writes are refused unsent while `holds` says no. */
export function fenceKube(access: KubeAccess, holds: () => boolean): KubeAccess {
  return {
    ...access,
    beforeSend(method, path) {
      if (method !== "GET" && !holds()) throw new KubeFencedError(method, path);
    },
  };
}
