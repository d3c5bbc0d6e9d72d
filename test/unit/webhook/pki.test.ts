// keyward's webhook CA and serving certificate over a fake clock (src/webhook/pki.ts planTls, and
// keeper.ts renewTls with real certificates): made when absent, renewed at two thirds of their
// lives, a renewed CA trusted (in the bundle) beside the old one before a certificate it signed
// is served, expired CAs dropped from the bundle.
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  BACKDATE_MS,
  CA_LIFETIME_MS,
  SERVING_LIFETIME_MS,
  SETTLE_MS,
  planTls,
  renewalTime,
  splitPem,
  type CertFacts,
  type ServingFacts,
} from "../../../src/webhook/pki.ts";
import { issuer } from "../../../src/webhook/issue.ts";
import { SECRET_KEYS, renewTls, tlsDue, serviceDnsNames, type TlsData } from "../../../src/webhook/keeper.ts";

const DAY = 24 * 60 * 60 * 1000;
const T0 = Date.parse("2027-01-01T00:00:00Z");
const names = { dnsNames: serviceDnsNames("keyward-webhook", "keyward-system"), ipAddresses: [] };

const ca = (issuedAt: number, fingerprint = "ca-1"): CertFacts => ({
  notBefore: issuedAt - BACKDATE_MS,
  notAfter: issuedAt + CA_LIFETIME_MS,
  fingerprint,
});
const serving = (issuedAt: number, issuer: string): ServingFacts => ({
  notBefore: issuedAt - BACKDATE_MS,
  notAfter: issuedAt + SERVING_LIFETIME_MS,
  fingerprint: `s-${issuedAt}`,
  dnsNames: names.dnsNames,
  ipAddresses: [],
  issuer,
});

describe("planTls", () => {
  it("makes a CA and a serving certificate when there are none", () => {
    expect(planTls({ bundle: [] }, T0, names)).toEqual({ newCa: true, newServing: true, keep: [] });
  });

  it("makes nothing while both are valid and not due", () => {
    const c = ca(T0);
    const plan = planTls({ ca: c, serving: serving(T0, "ca-1"), bundle: [c] }, T0 + 59 * DAY, names);
    expect(plan).toEqual({ newCa: false, newServing: false, keep: ["ca-1"] });
  });

  it("renews the serving certificate at two thirds of its life", () => {
    const c = ca(T0);
    const s = serving(T0, "ca-1");
    expect(planTls({ ca: c, serving: s, bundle: [c] }, renewalTime(s) - 1, names).newServing).toBe(false);
    expect(planTls({ ca: c, serving: s, bundle: [c] }, renewalTime(s), names)).toEqual({ newCa: false, newServing: true, keep: ["ca-1"] });
  });

  it("renews the CA at two thirds of its life, keeps the old one trusted and serves the old certificate until the new CA settles", () => {
    const old = ca(T0, "ca-1");
    const at = renewalTime(old);
    const s = serving(at - 10 * DAY, "ca-1");
    expect(planTls({ ca: old, serving: s, bundle: [old] }, at, names)).toEqual({ newCa: true, newServing: false, keep: ["ca-1"] });
    // the next pass: the new CA is current, the old one still in the bundle
    const fresh = ca(at, "ca-2");
    const bundle = [fresh, old];
    expect(planTls({ ca: fresh, serving: s, bundle }, at + SETTLE_MS - 1, names).newServing).toBe(false);
    expect(planTls({ ca: fresh, serving: s, bundle }, fresh.notBefore + BACKDATE_MS + SETTLE_MS, names)).toEqual({
      newCa: false,
      newServing: true,
      keep: ["ca-2", "ca-1"],
    });
  });

  it("drops a CA from the bundle once it expired", () => {
    const old = ca(T0, "ca-1");
    const fresh = ca(renewalTime(old), "ca-2");
    const plan = planTls({ ca: fresh, serving: serving(old.notAfter - DAY, "ca-2"), bundle: [fresh, old] }, old.notAfter, names);
    expect(plan.keep).toEqual(["ca-2"]);
  });

  it("replaces a serving certificate at once when its names changed, it expired or no trusted CA signed it", () => {
    const c = ca(T0);
    const facts = (s: ServingFacts) => ({ ca: c, serving: s, bundle: [c] });
    expect(planTls(facts({ ...serving(T0, "ca-1"), dnsNames: ["old.svc"] }), T0 + DAY, names).newServing).toBe(true);
    expect(planTls(facts(serving(T0, "ca-9")), T0 + DAY, names).newServing).toBe(true);
    const { issuer: _none, ...unsigned } = serving(T0, "ca-1");
    expect(planTls(facts(unsigned), T0 + DAY, names).newServing).toBe(true);
    const s = serving(T0, "ca-1");
    expect(planTls(facts(s), s.notAfter, names).newServing).toBe(true);
  });
});

describe("renewTls (real certificates)", () => {
  const x509 = (pem: string | undefined): X509Certificate => new X509Certificate(pem ?? "");
  const bundleOf = (data: TlsData): X509Certificate[] => splitPem(data[SECRET_KEYS.bundle] ?? "").map((p) => new X509Certificate(p));

  it("makes, keeps, rotates and retires the CA with no moment the served certificate is untrusted", () => {
    const first = renewTls({}, T0, names, issuer);
    const cert = x509(first[SECRET_KEYS.cert]);
    const firstCa = x509(first[SECRET_KEYS.caCert]);
    expect(cert.checkIssued(firstCa) && cert.verify(firstCa.publicKey)).toBe(true);
    expect(cert.subjectAltName).toBe(names.dnsNames.map((n) => `DNS:${n}`).join(", "));
    expect(cert.ca).toBe(false);
    expect(firstCa.ca).toBe(true);
    expect(bundleOf(first).map((c) => c.fingerprint256)).toEqual([firstCa.fingerprint256]);

    // nothing due: the same data, not a copy (the keeper writes nothing)
    expect(renewTls(first, T0 + 30 * DAY, names, issuer)).toBe(first);
    expect(tlsDue(first, T0 + 30 * DAY, names)).toBe(false);
    expect(tlsDue(first, T0 + 61 * DAY, names)).toBe(true);

    // the serving certificate at two thirds of its life: a new one, same CA, same bundle
    const renewed = renewTls(first, T0 + 61 * DAY, names, issuer);
    expect(renewed[SECRET_KEYS.caCert]).toBe(first[SECRET_KEYS.caCert]);
    expect(renewed[SECRET_KEYS.bundle]).toBe(first[SECRET_KEYS.bundle]);
    expect(renewed[SECRET_KEYS.cert]).not.toBe(first[SECRET_KEYS.cert]);

    // walk the clock a day at a time through the CA's rotation and its expiry
    let data = renewed;
    let rotatedAt: number | undefined;
    for (let t = T0 + 62 * DAY; t <= T0 + CA_LIFETIME_MS + 30 * DAY; t += DAY) {
      const next = renewTls(data, t, names, issuer);
      const served = x509(next[SECRET_KEYS.cert]);
      // what the apiserver trusts always holds the served certificate's issuer, and it is valid
      expect(
        bundleOf(next).some((c) => served.checkIssued(c) && served.verify(c.publicKey)),
        new Date(t).toISOString(),
      ).toBe(true);
      expect(served.validToDate.getTime()).toBeGreaterThan(t);
      if (rotatedAt === undefined && next[SECRET_KEYS.caCert] !== data[SECRET_KEYS.caCert]) {
        rotatedAt = t;
        // the new CA joins the old one; the certificate the old CA signed is still served
        expect(bundleOf(next)).toHaveLength(2);
        expect(next[SECRET_KEYS.cert]).toBe(data[SECRET_KEYS.cert]);
      }
      data = next;
    }
    expect(rotatedAt).toBeGreaterThanOrEqual(renewalTime({ notBefore: T0 - BACKDATE_MS, notAfter: T0 + CA_LIFETIME_MS }));
    // past the first CA's expiry: it left the bundle, and the served certificate is the new CA's
    expect(bundleOf(data).map((c) => c.fingerprint256)).not.toContain(firstCa.fingerprint256);
    expect(x509(data[SECRET_KEYS.cert]).checkIssued(x509(data[SECRET_KEYS.caCert]))).toBe(true);
  });

  it("a serving certificate never outlives the CA that signed it", () => {
    const first = renewTls({}, T0, names, issuer);
    const caEnd = x509(first[SECRET_KEYS.caCert]).validToDate.getTime();
    // just before the CA's renewal, with the serving certificate made due by a change of names
    const late = renewTls(first, caEnd - 130 * DAY, { ...names, dnsNames: ["other.keyward-system.svc"] }, issuer);
    expect(x509(late[SECRET_KEYS.cert]).validToDate.getTime()).toBeLessThanOrEqual(caEnd);
  });

  it("starts over from a Secret whose contents do not parse", () => {
    const broken = { [SECRET_KEYS.caCert]: "junk", [SECRET_KEYS.caKey]: "junk", [SECRET_KEYS.cert]: "junk", [SECRET_KEYS.key]: "junk" };
    const next = renewTls(broken, T0, names, issuer);
    expect(x509(next[SECRET_KEYS.cert]).checkIssued(x509(next[SECRET_KEYS.caCert]))).toBe(true);
  });
});
