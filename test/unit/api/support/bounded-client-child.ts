// A child process that calls a misbehaving server through sendRequest and prints each call's
// outcome as one JSON line, then exits 0. Run by test/unit/api/response-body-crash.test.ts: an
// error left unhandled by the client (a destroyed body's 'error' event nobody listens for) ends
// this process before it prints, which the test sees as a non-zero exit.
//   node test/unit/api/support/bounded-client-child.ts <baseUrl>
import { ResponseTooLargeError, TransportError } from "../../../../src/api/errors.ts";
import { closeConnections, responseBudget, sendRequest, serviceBase, setResponseBudget } from "../../../../src/api/http.ts";

const KIB = 1024;
const baseUrl = process.argv[2] ?? "";

interface Outcome {
  scenario: string;
  result: "ok" | "ResponseTooLargeError" | "TransportError" | "other";
  kind?: string;
  code?: string;
  retryable?: boolean;
  inFlightAfter: number;
}

async function call(
  scenario: string,
  path: string,
  opts: { budget: number; share: number; limit: number; timeoutMs: number },
): Promise<Outcome> {
  setResponseBudget(opts.budget, opts.share);
  try {
    await sendRequest(
      {
        base: serviceBase(baseUrl),
        method: "GET",
        path,
        headers: {},
        timeoutMs: opts.timeoutMs,
        maxResponseBytes: opts.limit,
        tenant: "ns",
      },
      "getThing",
    );
    return { scenario, result: "ok", inFlightAfter: responseBudget().inFlight };
  } catch (err) {
    const inFlightAfter = responseBudget().inFlight;
    if (err instanceof ResponseTooLargeError) return { scenario, result: "ResponseTooLargeError", inFlightAfter };
    if (err instanceof TransportError)
      return {
        scenario,
        result: "TransportError",
        kind: err.kind,
        ...(err.code ? { code: err.code } : {}),
        retryable: err.retryable,
        inFlightAfter,
      };
    return { scenario, result: "other", inFlightAfter };
  }
}

const roomy = { budget: 2048 * KIB, share: 1024 * KIB, limit: 1024 * KIB, timeoutMs: 5_000 };
const tight = { budget: 512, share: 512, limit: KIB, timeoutMs: 5_000 };
const outcomes: Outcome[] = [];
// A declared length past the limit: refused before a byte is read, the body still arriving...
outcomes.push(await call("declared-over-limit", "/trickle?declare=16777216", roomy));
// ... or already whole (it came with the headers).
outcomes.push(await call("declared-over-limit-whole", "/whole?size=2048", tight));
// A body within the limit whose bytes do not fit in the budget: still arriving...
outcomes.push(await call("over-budget", "/fill?declare=1048576&send=786432", { ...roomy, budget: 512 * KIB, share: 512 * KIB }));
// ... or already whole.
outcomes.push(await call("over-budget-whole", "/whole?size=600", tight));
// A declared length within the limit, a byte at a time until the call's deadline.
outcomes.push(await call("trickle", "/trickle?declare=1048576", { ...roomy, timeoutMs: 300 }));
// Still alive, and a whole body still reads.
outcomes.push(await call("after", "/whole?size=2", tight));
await closeConnections();
process.stdout.write(`${JSON.stringify(outcomes)}\n`);
