// The client never leaves an error unhandled, whatever a server does with a response body: a
// declared length past the limit, a body that does not fit in the response budget, a body that
// trickles past the call's deadline. Each call fails with its classified error and the process
// lives on. In a child process (support/bounded-client-child.ts), so that an 'error' event nobody
// listens for shows as the process exiting, as it would take keyward down.
import { spawn } from "node:child_process";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let server: Server;
let baseUrl: string;
const child = fileURLToPath(new URL("./support/bounded-client-child.ts", import.meta.url));

/** Writes one byte every 20 ms until the client goes away. */
function trickle(res: ServerResponse): void {
  const timer = setInterval(() => res.write("a"), 20);
  res.on("close", () => clearInterval(timer));
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const declare = url.searchParams.get("declare");
    if (url.pathname === "/whole") {
      // The whole body with its headers, in one write.
      const size = Number(url.searchParams.get("size"));
      res.writeHead(200, { "content-type": "text/plain", "content-length": String(size) }).end(Buffer.alloc(size, 97));
      return;
    }
    res.writeHead(200, { "content-type": "text/plain", ...(declare ? { "content-length": declare } : {}) });
    if (url.pathname === "/fill") {
      // Part of the declared body at once, then silence until the client goes away.
      res.write(Buffer.alloc(Number(url.searchParams.get("send")), 97));
      return;
    }
    res.write("a");
    trickle(res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function runChild(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [child, baseUrl], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
    p.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    p.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("a response body that does not fit", () => {
  it("fails its call with a classified error and never an unhandled one: the process lives on", async () => {
    const run = await runChild();
    expect(run.stderr).not.toMatch(/AbortError|RequestAbortedError|uncaught/i);
    expect(run.code, run.stderr).toBe(0);
    const outcomes = JSON.parse(run.stdout) as {
      scenario: string;
      result: string;
      code?: string;
      kind?: string;
      retryable?: boolean;
      inFlightAfter: number;
    }[];
    expect(outcomes.map((o) => [o.scenario, o.result])).toEqual([
      ["declared-over-limit", "ResponseTooLargeError"],
      ["declared-over-limit-whole", "ResponseTooLargeError"],
      ["over-budget", "TransportError"],
      ["over-budget-whole", "TransportError"],
      ["trickle", "TransportError"],
      ["after", "ok"],
    ]);
    for (const o of [outcomes[2], outcomes[3]]) expect(o).toMatchObject({ code: "KEYWARD_RESPONSE_BUDGET", retryable: true });
    expect(outcomes[4]).toMatchObject({ kind: "timeout", retryable: true });
    for (const o of outcomes) expect(o.inFlightAfter, o.scenario).toBe(0);
  });
});
