// The conversion webhook as one part of a keyward process: its TLS (keyward's own CA kept in a
// Secret, keeper.ts, or a certificate mounted from cert-manager) and its server. Started before
// leader election and shard membership, so standby replicas serve conversions too.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Kube } from "../kube/client.ts";
import type { Logger } from "../log.ts";
import type { Kind } from "../resources/kind.ts";
import { kinds as registry } from "../resources/registry.ts";
import {
  SECRET_KEYS,
  callsService,
  injectCaBundle,
  serviceDnsNames,
  syncTlsSecret,
  type ClientConfig,
  type TlsSecretRef,
} from "./keeper.ts";
import { startWebhookServer, type ServingCertificate, type WebhookServer } from "./server.ts";

export interface ConversionWebhookOptions {
  kube: Kube;
  log: Logger;
  port: number;
  bindAddress: string;
  /**
   * keyward's own CA: the Service the apiserver calls (its DNS names go into the certificate) and
   * the Secret holding the CA and certificate, both in keyward's namespace.
   */
  selfSigned?: {
    namespace: string;
    service: string;
    secretName: string;
    /** IP addresses the certificate also names (a test's 127.0.0.1). */
    extraIpAddresses?: string[];
    /** Which CRDs' webhook is this one: by default those calling `service` in `namespace`. */
    ours?: (config: ClientConfig) => boolean;
  };
  /** A directory holding tls.crt and tls.key (cert-manager's Certificate, mounted): read, never written, no caBundle injected. */
  certDir?: string;
  /** The CRDs whose caBundle is kept (keyward's own, unless a test serves its kinds in a group of its own). */
  crdNames?: readonly string[];
  kinds?: readonly Kind[];
  /** How often the certificate is checked (and renewed when due) and the CRDs' caBundle compared. */
  intervalMs?: number;
  now?: () => number;
}

export interface ConversionWebhook {
  /** Resolves once the server listens with a certificate. */
  readonly serving: Promise<WebhookServer>;
  /** Every answer from now on closes its connection (WebhookServer.drain). */
  drain(): void;
  stop(): Promise<void>;
}

/** The CRD name of each kind keyward serves: `<plural>.<group>`. */
export const crdNamesOf = (kinds: readonly Kind[]): string[] => kinds.map((k) => `${k.ref.plural}.${k.ref.group}`);

/**
 * A CRD created again (deleted and put back by a helm upgrade, restored from a backup) has no
 * caBundle, and reads through the webhook fail until a pass writes it: every 30 s bounds that,
 * for 8 reads a pass (the Secret and the seven CRDs) and a write only when something differs.
 */
const DEFAULT_INTERVAL_MS = 30 * 1000;
/** A failed pass (apiserver unreachable, a conflict lost three times) is retried sooner than the interval. */
const RETRY_MS = 5_000;

interface Certificate {
  cert: ServingCertificate;
  /** keyward's own CA: the bundle to write into the CRDs whose webhook `ours` recognizes. */
  bundle?: string;
  ours?: (c: ClientConfig) => boolean;
}

/** The certificate to serve: the mounted one, or keyward's own (its Secret made or renewed when due). */
async function certificate(opts: ConversionWebhookOptions, now: () => number): Promise<Certificate> {
  if (opts.certDir) {
    const [cert, key] = await Promise.all([
      readFile(join(opts.certDir, "tls.crt"), "utf8"),
      readFile(join(opts.certDir, "tls.key"), "utf8"),
    ]);
    return { cert: { cert, key } };
  }
  const self = opts.selfSigned;
  if (!self) throw new Error("the conversion webhook needs its own CA (a Service and Secret) or a certificate directory");
  const ref: TlsSecretRef = { namespace: self.namespace, name: self.secretName };
  const names = { dnsNames: serviceDnsNames(self.service, self.namespace), ipAddresses: self.extraIpAddresses ?? [] };
  const data = await syncTlsSecret(opts.kube, ref, names, now);
  return {
    cert: { cert: data[SECRET_KEYS.cert] ?? "", key: data[SECRET_KEYS.key] ?? "" },
    bundle: data[SECRET_KEYS.bundle] ?? "",
    ours: self.ours ?? callsService(self.namespace, self.service),
  };
}

export function startConversionWebhook(opts: ConversionWebhookOptions): ConversionWebhook {
  const { log } = opts;
  const now = opts.now ?? Date.now;
  const interval = opts.intervalMs ?? DEFAULT_INTERVAL_MS;
  const crdNames = opts.crdNames ?? crdNamesOf(opts.kinds ?? registry);
  let server: WebhookServer | undefined;
  let served: ServingCertificate | undefined;
  let stopped = false;
  let draining = false;
  let timer: NodeJS.Timeout | undefined;
  let resolveServing: (s: WebhookServer) => void = () => undefined;
  const serving = new Promise<WebhookServer>((resolve) => (resolveServing = resolve));

  const pass = async (): Promise<void> => {
    const { cert, bundle, ours } = await certificate(opts, now);
    if (!server) {
      server = await startWebhookServer({
        port: opts.port,
        bindAddress: opts.bindAddress,
        certificate: cert,
        log,
        ...(opts.kinds ? { kinds: opts.kinds } : {}),
      });
      served = cert;
      if (draining) server.drain();
      if (stopped) {
        await server.close();
        return;
      }
      log.info({ port: server.port }, "conversion webhook serving");
      resolveServing(server);
    } else if (served?.cert !== cert.cert || served.key !== cert.key) {
      server.setCertificate(cert);
      served = cert;
      log.info("conversion webhook: serving a renewed certificate");
    }
    if (bundle !== undefined && ours) {
      const written = await injectCaBundle(opts.kube, crdNames, bundle, ours);
      if (written.length > 0) log.info({ crds: written }, "conversion webhook: CA bundle written into the CRDs");
    }
  };

  const loop = (): void => {
    pass().then(
      () => schedule(interval),
      (err: unknown) => {
        // The error of an apiserver call or of a file read: a status message or a path, never a key.
        log.warn({ err: err instanceof Error ? err.message : String(err) }, "conversion webhook: TLS pass failed; retrying");
        schedule(RETRY_MS);
      },
    );
  };
  const schedule = (ms: number): void => {
    if (stopped) return;
    timer = setTimeout(loop, ms);
    timer.unref();
  };
  loop();

  return {
    serving,
    drain() {
      draining = true;
      server?.drain();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await server?.close();
    },
  };
}
