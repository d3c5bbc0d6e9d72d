// keyward's connection to the apiserver: one HTTP/2 session (Node's http2 client), every request
// and watch a stream on it, as client-go does. undici carried these before, over the same
// HTTP/2; its request layer cost a quarter of each request's CPU on the create path
// (bench/RESULTS.md), and keyward needs nothing of it here but the stream. A server that does
// not speak HTTP/2 (a proxy in front of the apiserver that negotiates HTTP/1.1) is served by the
// fallback dispatcher from then on.
import http2, { type ClientHttp2Session, type ClientHttp2Stream, type SecureClientSessionOptions } from "node:http2";
import type { Readable } from "node:stream";

export interface KubeDispatchOptions {
  origin: string;
  path: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
  signal: AbortSignal | null;
}

/** A response body: a stream to read, or text() for all of it, or dump() to drop it. */
export type KubeBody = Readable & { text(): Promise<string>; dump(): Promise<void> };

export interface KubeResponse {
  statusCode: number;
  body: KubeBody;
}

/** What sends a request to the apiserver: this module's HTTP/2 session, or an undici Agent. */
export interface KubeDispatcher {
  request(opts: KubeDispatchOptions): Promise<KubeResponse>;
}

/**
 * While a stream is open the session is pinged this often, and dropped when a ping is not
 * answered within PING_TIMEOUT_MS: every stream on it then fails, and the next request opens a
 * new session. A half-open connection is found in under a minute (client-go pings after 30 s
 * without a frame and gives the answer 15 s) instead of by each request's deadline in turn, and
 * a watch on it ends instead of waiting out its idle limit.
 */
export const PING_INTERVAL_MS = 30_000;
export const PING_TIMEOUT_MS = 15_000;

const { NGHTTP2_CANCEL } = http2.constants;

/**
 * Whether a request failed because the server does not speak HTTP/2: its TLS refused the `h2`
 * protocol (an alert, the stream cancelled with it as the cause), or it chose none and answered
 * the HTTP/2 preface as HTTP/1.1 would.
 */
export function refusedH2(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: { code?: unknown }; message?: unknown } | null;
  const alert = "ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL";
  if (e?.code === alert || e?.cause?.code === alert) return true;
  return e?.code === "ERR_HTTP2_STREAM_CANCEL" && typeof e.message === "string" && e.message.includes("no application protocol");
}

export interface H2DispatcherOptions {
  tls: SecureClientSessionOptions;
  /** For a server that answers TLS without HTTP/2 (made once, on the first such answer). */
  fallback: () => KubeDispatcher;
  pingIntervalMs?: number;
  pingTimeoutMs?: number;
}

/**
 * Streams a session takes before its server's SETTINGS say how many it allows: the apiserver's
 * default (Go's HTTP/2 server allows 100, and kube-apiserver keeps it unless
 * --http2-max-streams-per-connection is set).
 */
export const DEFAULT_MAX_STREAMS = 100;

/** A session and its open streams: it keeps the process alive only while one is open. */
interface Session {
  s: ClientHttp2Session;
  open: number;
  /** Streams the server allows at once on this session. */
  maxStreams: number;
  opened: () => void;
  released: () => void;
  /** Whether the server agreed to HTTP/2 (undefined until the handshake is done). */
  h2: boolean | undefined;
}

/**
 * A new session to `origin`, pinged while a stream is open; `onEnd` once it can take no more
 * streams, `onRefused` as soon as the server's handshake turns out not to be HTTP/2.
 */
function openSession(origin: string, opts: H2DispatcherOptions, onEnd: (session: Session) => void, onRefused: () => void): Session {
  const pingIntervalMs = opts.pingIntervalMs ?? PING_INTERVAL_MS;
  const pingTimeoutMs = opts.pingTimeoutMs ?? PING_TIMEOUT_MS;
  const s = http2.connect(origin, opts.tls);
  let pinging = false;
  const session: Session = {
    s,
    open: 0,
    maxStreams: DEFAULT_MAX_STREAMS,
    opened: () => {
      if (session.open++ === 0 && !s.destroyed) s.ref();
    },
    released: () => {
      if (--session.open === 0 && !s.destroyed) s.unref();
    },
    h2: undefined,
  };
  const health = setInterval(() => {
    // A session draining after GOAWAY takes no ping; its streams end on their own limits.
    if (pinging || session.open === 0 || s.closed || s.destroyed) return;
    pinging = true;
    const timeout = setTimeout(
      () => s.destroy(new Error(`apiserver ${origin}: no answer to an HTTP/2 ping within ${pingTimeoutMs} ms`)),
      pingTimeoutMs,
    );
    timeout.unref();
    // An error here is the session ending (the ping cancelled with it): nothing more to do.
    s.ping(() => {
      pinging = false;
      clearTimeout(timeout);
    });
  }, pingIntervalMs);
  health.unref();
  s.on("remoteSettings", (settings: http2.Settings) => {
    session.maxStreams = Math.max(1, settings.maxConcurrentStreams ?? DEFAULT_MAX_STREAMS);
  });
  // Errors reach the streams on the session; the session's own is only a reason to drop it.
  s.on("error", () => onEnd(session));
  s.on("goaway", () => onEnd(session));
  s.on("close", () => {
    onEnd(session);
    clearInterval(health);
  });
  s.once("connect", (_session, socket) => {
    session.h2 = (socket as { alpnProtocol?: string | false }).alpnProtocol === "h2";
    if (session.h2) return;
    // Before the streams on it fail, so that their requests find the fallback set.
    onRefused();
    s.destroy();
  });
  // Idle, the session does not keep the process alive; a stream in flight does.
  s.unref();
  return session;
}

/**
 * HTTP/2 sessions to `origin` (https): one, opened on first use and again after it ends, and
 * another whenever every open one has as many streams as its server allows (a request beyond the
 * limit would wait, unsent, behind watches that never end — Go's HTTP/2 client opens another
 * connection then too). An extra session closes once its last stream has.
 */
export function createH2Dispatcher(origin: string, opts: H2DispatcherOptions): KubeDispatcher {
  const sessions: Session[] = [];
  let fallback: KubeDispatcher | undefined;
  const onRefused = (): void => {
    fallback ??= opts.fallback();
  };
  const onEnd = (ended: Session): void => {
    const at = sessions.indexOf(ended);
    if (at >= 0) sessions.splice(at, 1);
  };
  const pick = (): Session => {
    for (const session of sessions) {
      if (!session.s.closed && !session.s.destroyed && session.open < session.maxStreams) return session;
    }
    const session = openSession(origin, opts, onEnd, onRefused);
    sessions.push(session);
    return session;
  };
  const release = (session: Session): void => {
    session.released();
    if (session.open === 0 && sessions.length > 1 && sessions[0] !== session && !session.s.closed) {
      onEnd(session);
      session.s.close();
    }
  };

  const stream = (req: KubeDispatchOptions): Promise<KubeResponse> =>
    new Promise<KubeResponse>((resolve, reject) => {
      const session = pick();
      const headers: http2.OutgoingHttpHeaders = { ...req.headers, ":method": req.method, ":path": req.path };
      let st: ClientHttp2Stream;
      try {
        st = session.s.request(headers, { endStream: req.body === null, ...(req.signal ? { signal: req.signal } : {}) });
      } catch (err) {
        // A session that received GOAWAY or closed a moment ago: the next request opens another.
        onEnd(session);
        reject(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      session.opened();
      st.once("close", () => release(session));
      const onError = (err: Error): void => reject(err);
      st.once("error", onError);
      st.once("response", (responseHeaders) => {
        st.off("error", onError);
        resolve({ statusCode: Number(responseHeaders[":status"]), body: bodyOf(st) });
      });
      if (req.body !== null) st.end(req.body);
    });

  return {
    async request(req) {
      if (fallback) return fallback.request(req);
      try {
        return await stream(req);
      } catch (err) {
        // Nothing reached the server as a request: it goes the other way, as does every later one.
        if (fallback || refusedH2(err)) {
          fallback ??= opts.fallback();
          return fallback.request(req);
        }
        throw err;
      }
    },
  };
}

/** The stream as a body: text() and dump() as undici's bodies have them. */
function bodyOf(st: ClientHttp2Stream): KubeBody {
  const body = st as unknown as KubeBody;
  body.text = () =>
    new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      st.on("data", (chunk: Buffer) => chunks.push(chunk));
      st.once("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      st.once("error", reject);
      st.once("close", () => {
        if (!st.readableEnded) reject(new Error("the apiserver's answer was cut off"));
      });
    });
  body.dump = () => {
    // Closed from this side: nothing to report if the server's reset races it.
    st.on("error", () => undefined);
    if (!st.closed) st.close(NGHTTP2_CANCEL);
    st.resume();
    return Promise.resolve();
  };
  return body;
}
