// The conversion webhook's HTTPS server: POST /convert answers a ConversionReview (review.ts).
// Every keyward replica serves it, leader or not, so the apiserver reaches one through the
// Service whichever replicas run. A request body is bounded in bytes and in time before it is
// parsed; the certificate is swapped in place (setCertificate) when the TLS Secret rotates.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Server } from "node:https";
import { once } from "node:events";
import type { Logger } from "../log.ts";
import type { Kind } from "../resources/kind.ts";
import { reviewConversion } from "./review.ts";

const nodeHttps = process.getBuiltinModule("node:https");

export const CONVERT_PATH = "/convert";
/** The apiserver sends at most a list's worth of objects of at most 1.5 MiB each in one review; 6 MiB bounds one request. */
export const DEFAULT_MAX_REVIEW_BYTES = 6 * 1024 * 1024;
/** The apiserver gives a conversion webhook 30 s at most; a body still arriving after this is not its. */
export const DEFAULT_REVIEW_TIMEOUT_MS = 10_000;

export interface ServingCertificate {
  /** PEM: the serving certificate. */
  cert: string;
  /** PEM: its private key. */
  key: string;
}

export interface WebhookServerOptions {
  port: number;
  bindAddress: string;
  certificate: ServingCertificate;
  log: Logger;
  maxBodyBytes?: number;
  timeoutMs?: number;
  /** The kinds converted: keyward's registry unless a test serves them in a group of its own. */
  kinds?: readonly Kind[];
}

export interface WebhookServer {
  /** The port listened on (the option's, or the one the system chose for port 0). */
  readonly port: number;
  /** Serves `certificate` from the next TLS handshake on; connections already open keep theirs. */
  setCertificate(certificate: ServingCertificate): void;
  /**
   * From now on every answer closes its connection (`connection: close`): a stopping pod's
   * clients open their next connection elsewhere instead of reusing one this server is about to
   * close, which a client may already be writing a review on when the close arrives.
   */
  drain(): void;
  close(): Promise<void>;
}

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > max) {
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.removeAllListeners("data");
        reject(new BodyTooLarge());
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const max = opts.maxBodyBytes ?? DEFAULT_MAX_REVIEW_BYTES;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_REVIEW_TIMEOUT_MS;
  const { log } = opts;
  let draining = false;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (draining) res.setHeader("connection", "close");
    const path = (req.url ?? "/").split("?")[0];
    if (path !== CONVERT_PATH) return answer(res, 404, { message: "not found" });
    if (req.method !== "POST") return answer(res, 405, { message: "POST a ConversionReview" });
    const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim();
    if (type !== "application/json") return answer(res, 415, { message: "a ConversionReview in application/json" });
    let parsed: unknown;
    try {
      parsed = JSON.parse((await readBody(req, max)).toString("utf8"));
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        log.warn({ maxBytes: max }, "conversion webhook: request body too large; refused");
        res.setHeader("connection", "close");
        return answer(res, 413, { message: `a ConversionReview of at most ${max} bytes` });
      }
      return answer(res, 400, { message: "not JSON" });
    }
    const outcome = reviewConversion(parsed, opts.kinds);
    const fields = { objects: outcome.objects, desiredAPIVersion: outcome.desiredAPIVersion };
    if (outcome.refusedField !== undefined) log.info({ ...fields, field: outcome.refusedField }, "conversion webhook: review refused");
    else if (outcome.httpStatus !== 200) log.info("conversion webhook: not a ConversionReview; refused");
    else log.debug(fields, "conversion webhook: review converted");
    answer(res, outcome.httpStatus, outcome.body);
  };
  const server: Server = nodeHttps.createServer(
    {
      cert: opts.certificate.cert,
      key: opts.certificate.key,
      minVersion: "TLSv1.2",
      // A whole request (headers and body) within the timeout; a slow sender is cut off.
      requestTimeout: timeoutMs,
      headersTimeout: Math.min(timeoutMs, 60_000),
      // how often those timeouts are checked (Node: every 30 s)
      connectionsCheckingInterval: Math.min(timeoutMs, 1_000),
    },
    (req, res) => {
      handle(req, res).catch((err: unknown) => {
        log.error({ err: err instanceof Error ? err.name : "error" }, "conversion webhook: request failed");
        if (!res.headersSent) answer(res, 500, { message: "internal error" });
        else res.destroy();
      });
    },
  );
  // Longer than the apiserver's idle-connection timeout (90 s, Go's default): the client closes an
  // idle connection before this server does, never while it may be sending a review on it.
  server.keepAliveTimeout = 120_000;
  server.listen(opts.port, opts.bindAddress);
  await once(server, "listening");
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : opts.port;
  return {
    port,
    setCertificate(certificate) {
      server.setSecureContext({ cert: certificate.cert, key: certificate.key, minVersion: "TLSv1.2" });
    },
    drain() {
      draining = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
