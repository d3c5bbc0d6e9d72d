// Credentials for the local control plane. With the openssl CLI: one CA signs the
// apiserver's serving certificate and client certificates (the admin and the controller
// manager, both in system:masters). Without it, kube-apiserver self-signs its serving
// certificate in --cert-dir and the clients authenticate with a static token file.
import { execFile } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

export type PkiMode = "openssl" | "apiserver-self-signed";

/** How one client authenticates: a client certificate or a bearer token (PEM / token text). */
export type ClientCredential = { kind: "certificate"; certPem: string; keyPem: string } | { kind: "token"; token: string };

export interface Pki {
  mode: PkiMode;
  dir: string;
  /** kube-apiserver flags for serving, client authentication and service-account tokens. */
  apiserverFlags: string[];
  admin: ClientCredential;
  controllerManager: ClientCredential;
  /** The CA bundle clients trust; with a self-signing apiserver it exists only once the apiserver has started. */
  caPem(): Promise<string>;
}

export const adminUser = "keyward-admin";
const mastersGroup = "system:masters";

export async function choosePkiMode(): Promise<PkiMode> {
  try {
    await execFileAsync("openssl", ["version"]);
    return "openssl";
  } catch {
    return "apiserver-self-signed";
  }
}

export async function createPki(dir: string, mode: PkiMode): Promise<Pki> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const serviceAccountFlags = await serviceAccountKeys(dir);
  return mode === "openssl" ? opensslPki(dir, serviceAccountFlags) : selfSignedPki(dir, serviceAccountFlags);
}

function ecKeyPair(): { privateKey: string; publicKey: string } {
  return generateKeyPairSync("ec", {
    namedCurve: "prime256v1",
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
}

async function serviceAccountKeys(dir: string): Promise<string[]> {
  const { privateKey, publicKey } = ecKeyPair();
  await writeFile(join(dir, "sa.key"), privateKey, { mode: 0o600 });
  await writeFile(join(dir, "sa.pub"), publicKey);
  return [
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    `--service-account-key-file=${join(dir, "sa.pub")}`,
    `--service-account-signing-key-file=${join(dir, "sa.key")}`,
  ];
}

const opensslConfig = `[req]
distinguished_name = dn
prompt = no
[dn]
CN = keyward-local
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
`;

async function openssl(args: string[]): Promise<void> {
  try {
    await execFileAsync("openssl", args);
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`openssl ${args[0] ?? ""} failed: ${stderr.trim()}`, { cause: error });
  }
}

interface Signed {
  certPath: string;
  keyPath: string;
}

async function signedCertificate(dir: string, name: string, subject: string, extensions: "server" | "client"): Promise<Signed> {
  const config = join(dir, "openssl.cnf");
  const keyPath = join(dir, `${name}.key`);
  const certPath = join(dir, `${name}.crt`);
  const csrPath = join(dir, `${name}.csr`);
  await writeFile(keyPath, ecKeyPair().privateKey, { mode: 0o600 });
  await openssl(["req", "-new", "-config", config, "-key", keyPath, "-subj", subject, "-out", csrPath]);
  const serial = `0x${randomBytes(16).toString("hex")}`;
  await openssl([
    "x509",
    "-req",
    "-in",
    csrPath,
    "-CA",
    join(dir, "ca.crt"),
    "-CAkey",
    join(dir, "ca.key"),
    "-set_serial",
    serial,
    "-days",
    "3650",
    "-extfile",
    config,
    "-extensions",
    extensions,
    "-out",
    certPath,
  ]);
  return { certPath, keyPath };
}

async function certificateCredential(signed: Signed): Promise<ClientCredential> {
  return { kind: "certificate", certPem: await readFile(signed.certPath, "utf8"), keyPem: await readFile(signed.keyPath, "utf8") };
}

async function opensslPki(dir: string, serviceAccountFlags: string[]): Promise<Pki> {
  await writeFile(join(dir, "openssl.cnf"), opensslConfig);
  await writeFile(join(dir, "ca.key"), ecKeyPair().privateKey, { mode: 0o600 });
  await openssl([
    "req",
    "-x509",
    "-new",
    "-config",
    join(dir, "openssl.cnf"),
    "-extensions",
    "ca",
    "-key",
    join(dir, "ca.key"),
    "-subj",
    "/CN=keyward-local-ca",
    "-days",
    "3650",
    "-out",
    join(dir, "ca.crt"),
  ]);
  const serving = await signedCertificate(dir, "apiserver", "/CN=kube-apiserver", "server");
  const admin = await signedCertificate(dir, "admin", `/O=${mastersGroup}/CN=${adminUser}`, "client");
  const kcm = await signedCertificate(dir, "controller-manager", `/O=${mastersGroup}/CN=system:kube-controller-manager`, "client");
  const caPem = await readFile(join(dir, "ca.crt"), "utf8");
  return {
    mode: "openssl",
    dir,
    apiserverFlags: [
      `--tls-cert-file=${serving.certPath}`,
      `--tls-private-key-file=${serving.keyPath}`,
      `--client-ca-file=${join(dir, "ca.crt")}`,
      ...serviceAccountFlags,
    ],
    admin: await certificateCredential(admin),
    controllerManager: await certificateCredential(kcm),
    caPem: () => Promise.resolve(caPem),
  };
}

async function selfSignedPki(dir: string, serviceAccountFlags: string[]): Promise<Pki> {
  const adminToken = randomBytes(32).toString("hex");
  const kcmToken = randomBytes(32).toString("hex");
  const tokenFile = join(dir, "tokens.csv");
  await writeFile(
    tokenFile,
    `${adminToken},${adminUser},${adminUser},"${mastersGroup}"\n${kcmToken},system:kube-controller-manager,system:kube-controller-manager,"${mastersGroup}"\n`,
    { mode: 0o600 },
  );
  const certDir = join(dir, "apiserver-self-signed");
  // kube-apiserver writes its generated CA after the serving certificate in this one file.
  const bundle = join(certDir, "apiserver.crt");
  return {
    mode: "apiserver-self-signed",
    dir,
    apiserverFlags: [`--cert-dir=${certDir}`, `--token-auth-file=${tokenFile}`, ...serviceAccountFlags],
    admin: { kind: "token", token: adminToken },
    controllerManager: { kind: "token", token: kcmToken },
    caPem: async () => {
      if (!existsSync(bundle)) throw new Error(`kube-apiserver has not written ${bundle} yet`);
      return readFile(bundle, "utf8");
    },
  };
}
