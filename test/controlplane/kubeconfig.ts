// Kubeconfig files and HTTPS probes for the local control plane.
import { request } from "node:https";
import { writeFile } from "node:fs/promises";
import type { ClientCredential } from "./pki.ts";

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

export function renderKubeconfig(server: string, caPem: string, user: string, credential: ClientCredential): string {
  const userFields =
    credential.kind === "certificate"
      ? [`    client-certificate-data: ${b64(credential.certPem)}`, `    client-key-data: ${b64(credential.keyPem)}`]
      : [`    token: ${credential.token}`];
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: keyward-local",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(caPem)}`,
    "users:",
    `- name: ${user}`,
    "  user:",
    ...userFields,
    "contexts:",
    "- name: keyward-local",
    "  context:",
    "    cluster: keyward-local",
    `    user: ${user}`,
    "current-context: keyward-local",
    "",
  ].join("\n");
}

export async function writeKubeconfig(
  path: string,
  server: string,
  caPem: string,
  user: string,
  credential: ClientCredential,
): Promise<void> {
  await writeFile(path, renderKubeconfig(server, caPem, user, credential), { mode: 0o600 });
}

export interface ProbeTls {
  /** Undefined: do not verify the server (a component's self-signed health endpoint). */
  caPem: string | undefined;
  credential?: ClientCredential;
}

/** GET over HTTPS; resolves with the status and body, rejects on connection errors. */
export function httpsGet(url: string, tls: ProbeTls, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  const credential = tls.credential;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "GET",
        timeout: timeoutMs,
        ca: tls.caPem,
        rejectUnauthorized: tls.caPem !== undefined,
        cert: credential?.kind === "certificate" ? credential.certPem : undefined,
        key: credential?.kind === "certificate" ? credential.keyPem : undefined,
        headers: credential?.kind === "token" ? { authorization: `Bearer ${credential.token}` } : {},
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`timed out after ${timeoutMs}ms`)));
    req.on("error", reject);
    req.end();
  });
}
