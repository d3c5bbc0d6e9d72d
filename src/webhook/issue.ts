// How keyward's webhook CA and serving certificate are made. node:crypto makes keys and reads
// certificates but cannot issue one; node-forge builds and signs them. Loaded only when a
// certificate is due (keeper.ts), so a process whose certificates are current never holds it.
import { createPrivateKey, generateKeyPairSync, randomBytes } from "node:crypto";
import forge from "node-forge";
import { BACKDATE_MS, CA_LIFETIME_MS, SERVING_LIFETIME_MS, type Issuer, type KeyPair, type ServingNames } from "./pki.ts";

function forgeKeys(): { privatePem: string; publicKey: forge.pki.PublicKey; privateKey: forge.pki.rsa.PrivateKey } {
  // node:crypto makes the key (native, milliseconds); forge only signs with it.
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const privatePem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  return {
    privatePem,
    privateKey: forge.pki.privateKeyFromPem(privateKey.export({ type: "pkcs1", format: "pem" }).toString()),
    publicKey: forge.pki.publicKeyFromPem(publicKey.export({ type: "spki", format: "pem" }).toString()),
  };
}

/** forge writes CRLF; the Secret, the bundle and comparisons use LF. */
const pem = (text: string): string => text.replace(/\r\n/g, "\n");

function serial(): string {
  // positive: the first bit clear
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString("hex");
}

function baseCertificate(publicKey: forge.pki.PublicKey, now: number, lifetimeMs: number, notAfterCap?: number): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = serial();
  cert.validity.notBefore = new Date(now - BACKDATE_MS);
  cert.validity.notAfter = new Date(Math.min(now + lifetimeMs, notAfterCap ?? Infinity));
  return cert;
}

/** A new self-signed CA. */
function issueCa(now: number): KeyPair {
  const keys = forgeKeys();
  const cert = baseCertificate(keys.publicKey, now, CA_LIFETIME_MS);
  const name = [
    { name: "organizationName", value: "keyward" },
    { name: "commonName", value: `keyward webhook CA ${new Date(now).toISOString()}` },
  ];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([
    { name: "basicConstraints", cA: true, pathLenConstraint: 0, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { cert: pem(forge.pki.certificateToPem(cert)), key: keys.privatePem };
}

/** A serving certificate for `names`, signed by `ca`, expiring no later than it. */
function issueServing(ca: KeyPair, names: ServingNames, now: number): KeyPair {
  const caCert = forge.pki.certificateFromPem(ca.cert);
  const caKey = forge.pki.privateKeyFromPem(createPrivateKey(ca.key).export({ type: "pkcs1", format: "pem" }).toString());
  const keys = forgeKeys();
  const cert = baseCertificate(keys.publicKey, now, SERVING_LIFETIME_MS, caCert.validity.notAfter.getTime());
  cert.setSubject([{ name: "commonName", value: names.dnsNames[0] ?? names.ipAddresses[0] ?? "keyward-webhook" }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: "basicConstraints", cA: false, critical: true },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    {
      name: "subjectAltName",
      altNames: [...names.dnsNames.map((value) => ({ type: 2, value })), ...names.ipAddresses.map((ip) => ({ type: 7, ip }))],
    },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return { cert: pem(forge.pki.certificateToPem(cert)), key: keys.privatePem };
}

export const issuer: Issuer = { issueCa, issueServing };
