// A redirect from the service is never followed: a base URL that answers 301/302/303/307/308
// with a Location on another listening server gets an error, and the other server sees nothing
// (so the Authorization header goes nowhere but the base URL). Real HTTP on loopback.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient, isApiError } from "../../../src/api/index.ts";

const TOKEN = "kw-redirect-test-token-3f9a";

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

function listen(
  handler: (req: Seen, res: import("node:http").ServerResponse) => void,
): Promise<{ server: Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const s = { method: req.method ?? "", url: req.url ?? "", headers: req.headers };
      seen.push(s);
      handler(s, res);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const addr = server.address();
      resolve({ server, url: `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`, seen });
    });
  });
}

describe("redirects from the service", () => {
  let target: Awaited<ReturnType<typeof listen>>;
  let redirector: Awaited<ReturnType<typeof listen>>;
  let status = 302;

  beforeAll(async () => {
    // The second server answers everything as the service would: it must never be asked.
    target = await listen((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ projects: [] }));
    });
    redirector = await listen((req, res) => {
      res.writeHead(status, { location: `${target.url}${req.url}`, "content-type": "text/plain" });
      res.end("moved");
    });
  });
  afterAll(async () => {
    await new Promise((resolve) => target.server.close(resolve));
    await new Promise((resolve) => redirector.server.close(resolve));
  });

  for (const code of [301, 302, 303, 307, 308]) {
    it(`${code}: not followed, an error that names the status, the other server asked nothing`, async () => {
      status = code;
      const before = redirector.seen.length;
      const client = createApiClient({ baseUrl: redirector.url, token: TOKEN, retry: { maxAttempts: 3 } });
      const read = await client.listProjects({}).catch((err: unknown) => err);
      const write = await client.createProject({ projectName: "redirected", slug: "redirected" }).catch((err: unknown) => err);
      for (const err of [read, write]) {
        expect(isApiError(err)).toBe(true);
        expect((err as { status?: number }).status).toBe(code);
        expect((err as Error).message).not.toContain(TOKEN);
      }
      expect(target.seen).toEqual([]);
      // One request each (a 3xx is not retried either), and the token went only to the base URL.
      const asked = redirector.seen.slice(before);
      expect(asked.map((s) => s.method)).toEqual(["GET", "POST"]);
      expect(asked.every((s) => s.headers.authorization === `Bearer ${TOKEN}`)).toBe(true);
    });
  }
});
