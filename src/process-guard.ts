// What keyward's process does with an exception nothing caught.
//
// undici (8.12 and 8.13 measured) can let go of an HTTP/2 stream — a stopped watch's, an aborted
// request's — while Node still holds it, without an 'error' listener; when the connection ends
// later (an apiserver restart, a load balancer dropping it), Node emits the connection's
// SocketError on that stream, and an 'error' with no listener is thrown out of the event loop.
// That error belongs to no request (every request in flight gets its own through its handlers),
// so it is logged and keyward goes on. Any other uncaught exception still ends the process, as
// Node's default would, after one fatal log line.
import type { Logger } from "./log.ts";

/** undici's SocketError ("other side closed", "closed"): a connection's end, not a bug of keyward's. */
export function isOrphanedSocketError(err: unknown): boolean {
  return err instanceof Error && err.name === "SocketError" && (err as { code?: unknown }).code === "UND_ERR_SOCKET";
}

export function guardUncaughtExceptions(log: Logger): void {
  process.on("uncaughtException", (thrown: unknown, origin) => {
    // Anything can be thrown (null, a string): the handler must not throw itself.
    const err = thrown instanceof Error ? thrown : new Error(String(thrown));
    // Thrown from an 'error' event only: a promise rejected with it and never awaited is a bug
    // of keyward's (Node reports it with origin "unhandledRejection"), and stays fatal.
    if (origin === "uncaughtException" && isOrphanedSocketError(err)) {
      log.warn({ code: "UND_ERR_SOCKET", reason: err.message }, "a connection ended under a request that had already finished; ignored");
      return;
    }
    log.fatal({ origin, error: err.name, reason: err.message, stack: err.stack }, "uncaught exception; exiting");
    process.exit(1);
  });
}
