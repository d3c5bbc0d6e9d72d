// Waits until CRDs are Established by reading their status, instead of `kubectl wait
// --for=condition=Established`: kubectl wait fails at once ("status.conditions accessor error:
// <nil> is of the type <nil>") when it reads a CRD the apiserver has not yet given any condition,
// a race right after the apply (kubernetes/kubernetes#66439) that failed a cold CI run.

interface CrdStatus {
  metadata?: { name?: string };
  status?: { conditions?: { type?: string; status?: string }[] | null };
}

/** The names of the CRDs in `kubectl get -o json` output (one object or a List) not yet Established. */
export function notEstablished(getJson: string): string[] {
  const parsed = JSON.parse(getJson) as CrdStatus & { items?: CrdStatus[] };
  const crds = parsed.items ?? [parsed];
  return crds
    .filter((crd) => !(crd.status?.conditions ?? []).some((c) => c.type === "Established" && c.status === "True"))
    .map((crd) => crd.metadata?.name ?? "(unnamed)");
}

/**
 * Polls `kubectl get <targets> -o json` (targets: `crd/<name>` or `-f <file>` arguments) until
 * every CRD is Established. `get` runs kubectl and resolves to its stdout; its failures (a CRD
 * not created yet, an apiserver blip) are retried until the deadline.
 */
export async function waitForCrdsEstablished(
  get: (args: string[]) => Promise<string>,
  targets: string[],
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let last: string;
    try {
      const waiting = notEstablished(await get(["get", ...targets, "-o", "json"]));
      if (waiting.length === 0) return;
      last = `not Established: ${waiting.join(", ")}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() >= deadline) throw new Error(`CRDs not Established after ${timeoutMs / 1000}s (${last})`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
