// keyward's own CA and the webhook's serving certificate: when each is made or renewed (planTls,
// pure, over the time it is given) and what a certificate holds (read with node:crypto). How they
// are made: issue.ts.
//
// Lifetimes: the CA lives a year and the serving certificate 90 days, each renewed at two thirds
// of its life. A renewed CA joins the bundle the apiserver trusts beside the old one (kept until
// it expires), and a serving certificate it signs is only made once it has been in the bundle for
// SETTLE_MS, time enough for every replica to write the bundle into the CRDs: no request fails
// during a rotation.
import { X509Certificate, createPrivateKey } from "node:crypto";

const DAY_MS = 24 * 60 * 60 * 1000;
export const CA_LIFETIME_MS = 365 * DAY_MS;
export const SERVING_LIFETIME_MS = 90 * DAY_MS;
/** How long a new CA is trusted (in the bundle) before a certificate it signed is served. */
export const SETTLE_MS = 60 * 60 * 1000;
/** notBefore is this far in the past, so a peer whose clock is behind accepts a new certificate. */
export const BACKDATE_MS = 5 * 60 * 1000;

/** The facts planTls reads of a certificate. */
export interface CertFacts {
  notBefore: number;
  notAfter: number;
  fingerprint: string;
}

export interface ServingFacts extends CertFacts {
  dnsNames: string[];
  ipAddresses: string[];
  /** The fingerprint of the CA (the current one or one of the bundle) that signed it, if any did. */
  issuer?: string;
}

export interface TlsFacts {
  /** The current CA: the one new serving certificates are signed with. */
  ca?: CertFacts;
  serving?: ServingFacts;
  /** The CAs the CRDs' caBundle holds. */
  bundle: CertFacts[];
}

export interface TlsPlan {
  newCa: boolean;
  newServing: boolean;
  /** Fingerprints of the CAs the bundle keeps (the current CA first, then older ones not yet expired); a new CA goes before them. */
  keep: string[];
}

export interface ServingNames {
  dnsNames: string[];
  ipAddresses: string[];
}

/** When a certificate is due for renewal: two thirds into its life. */
export function renewalTime(cert: Pick<CertFacts, "notBefore" | "notAfter">): number {
  return cert.notBefore + ((cert.notAfter - cert.notBefore) * 2) / 3;
}

const sameSet = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x) => b.includes(x));

/** What to make at `now`; nothing when every certificate is valid, current and not due. */
export function planTls(facts: TlsFacts, now: number, names: ServingNames): TlsPlan {
  const { ca, serving } = facts;
  const newCa = !ca || now >= renewalTime(ca) || now < ca.notBefore;
  const unexpired = [...(ca && ca.notAfter > now ? [ca] : []), ...facts.bundle.filter((c) => c.notAfter > now)];
  const keep = [...new Set(unexpired.map((c) => c.fingerprint))];
  const servingUsable =
    serving !== undefined &&
    now >= serving.notBefore &&
    now < serving.notAfter &&
    sameSet(serving.dnsNames, names.dnsNames) &&
    sameSet(serving.ipAddresses, names.ipAddresses) &&
    serving.issuer !== undefined &&
    keep.includes(serving.issuer);
  // A CA made now is trusted only once the bundle holding it is written: the serving certificate
  // its predecessor signed is served until the new CA settles, unless there is no usable one.
  const caSettled = ca !== undefined && !newCa && now >= ca.notBefore + BACKDATE_MS + SETTLE_MS;
  const newServing = !servingUsable || (caSettled && (serving.issuer !== ca.fingerprint || now >= renewalTime(serving)));
  return { newCa, newServing, keep };
}

/** A certificate and its key, PEM. */
export interface KeyPair {
  cert: string;
  key: string;
}

/** Makes certificates (issue.ts, loaded only when one is due). */
export interface Issuer {
  /** A new self-signed CA. */
  issueCa(now: number): KeyPair;
  /** A serving certificate for `names`, signed by `ca`, expiring no later than it. */
  issueServing(ca: KeyPair, names: ServingNames, now: number): KeyPair;
}

// ---------------------------------------------------------------- reading

/** The certificates of a PEM text, in order; none for text that holds none or a broken one. */
export function splitPem(text: string): string[] {
  return [...text.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)].map((m) => `${m[0]}\n`);
}

export function certFacts(pem: string): CertFacts | undefined {
  try {
    const x = new X509Certificate(pem);
    return { notBefore: x.validFromDate.getTime(), notAfter: x.validToDate.getTime(), fingerprint: x.fingerprint256 };
  } catch {
    return undefined;
  }
}

/** The serving certificate's facts, when `pair.key` is its key and it parses; `cas` are the CAs that may have signed it. */
export function servingFacts(pair: KeyPair, cas: readonly string[]): ServingFacts | undefined {
  try {
    const x = new X509Certificate(pair.cert);
    if (!x.checkPrivateKey(createPrivateKey(pair.key))) return undefined;
    const alt = (x.subjectAltName ?? "").split(", ").filter(Boolean);
    const issuer = cas.map((pem) => new X509Certificate(pem)).find((ca) => x.checkIssued(ca) && x.verify(ca.publicKey));
    return {
      notBefore: x.validFromDate.getTime(),
      notAfter: x.validToDate.getTime(),
      fingerprint: x.fingerprint256,
      dnsNames: alt.filter((a) => a.startsWith("DNS:")).map((a) => a.slice(4)),
      ipAddresses: alt.filter((a) => a.startsWith("IP Address:")).map((a) => a.slice(11)),
      ...(issuer ? { issuer: issuer.fingerprint256 } : {}),
    };
  } catch {
    return undefined;
  }
}
