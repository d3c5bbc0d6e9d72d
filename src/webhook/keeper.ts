// The webhook's TLS, kept by every replica: the CA and serving certificate live in one Secret in
// keyward's namespace, made by whichever replica comes first (a create that conflicts means
// another replica made it: its Secret is read and used) and renewed by whichever replica finds
// them due (an update on the resourceVersion read: a conflict means another replica renewed
// first). Each replica serves the Secret's certificate and writes the Secret's CA bundle into the
// caBundle of each CRD whose conversion goes to the webhook, only when it differs.
import { crdKind, resourcePath, type Kube } from "../kube/client.ts";
import { getObject, isConflict, isKubeNotFound } from "../kube/objects.ts";
import { MERGE_PATCH, kubeJson } from "../kube/rest.ts";
import {
  certFacts,
  planTls,
  servingFacts,
  splitPem,
  type CertFacts,
  type Issuer,
  type KeyPair,
  type ServingNames,
  type TlsFacts,
} from "./pki.ts";

/** The Secret's keys: the current CA and its key, the serving certificate and its key, the CAs the CRDs trust. */
export const SECRET_KEYS = { caCert: "ca.crt", caKey: "ca.key", cert: "tls.crt", key: "tls.key", bundle: "ca-bundle.crt" } as const;

export type TlsData = Partial<Record<(typeof SECRET_KEYS)[keyof typeof SECRET_KEYS], string>>;

/** What the Secret's data holds, parsed: unparsable parts read as absent (and are made anew). */
function readTls(data: TlsData): { caPem?: string; caKey?: string; facts: TlsFacts; bundle: (CertFacts & { pem: string })[] } {
  const caPem = splitPem(data[SECRET_KEYS.caCert] ?? "")[0];
  const caKey = data[SECRET_KEYS.caKey];
  const ca = caPem && caKey ? certFacts(caPem) : undefined;
  const bundlePems = splitPem(data[SECRET_KEYS.bundle] ?? "");
  const cert = data[SECRET_KEYS.cert];
  const key = data[SECRET_KEYS.key];
  const serving = cert && key ? servingFacts({ cert, key }, [...(caPem ? [caPem] : []), ...bundlePems]) : undefined;
  const bundle = bundlePems.flatMap((pem) => {
    const facts = certFacts(pem);
    return facts ? [{ ...facts, pem }] : [];
  });
  return {
    ...(ca && caPem ? { caPem } : {}),
    ...(ca && caKey ? { caKey } : {}),
    facts: { ...(ca ? { ca } : {}), ...(serving ? { serving } : {}), bundle },
    bundle,
  };
}

/** Whether renewTls would change anything at `now` (without loading the issuer). */
export function tlsDue(data: TlsData, now: number, names: ServingNames): boolean {
  const read = readTls(data);
  const plan = planTls(read.facts, now, names);
  return plan.newCa || plan.newServing || bundleOf(read, plan.keep) !== data[SECRET_KEYS.bundle];
}

function bundleOf(read: ReturnType<typeof readTls>, keep: readonly string[]): string {
  const known = new Map([
    ...read.bundle.map((c) => [c.fingerprint, c.pem] as const),
    ...(read.facts.ca && read.caPem ? [[read.facts.ca.fingerprint, read.caPem] as const] : []),
  ]);
  return keep.flatMap((fp) => known.get(fp) ?? []).join("");
}

/** The Secret's data at `now`: the same object when nothing is due, else with what planTls asks for made anew by `issuer`. */
export function renewTls(data: TlsData, now: number, names: ServingNames, issuer: Issuer): TlsData {
  const read = readTls(data);
  const plan = planTls(read.facts, now, names);
  const kept = bundleOf(read, plan.keep);
  if (!plan.newCa && !plan.newServing && kept === data[SECRET_KEYS.bundle]) return data;
  const { caPem, caKey } = read;
  const signer: KeyPair = plan.newCa || !caPem || !caKey ? issuer.issueCa(now) : { cert: caPem, key: caKey };
  const servingPair: KeyPair = plan.newServing
    ? issuer.issueServing(signer, names, now)
    : { cert: data[SECRET_KEYS.cert] ?? "", key: data[SECRET_KEYS.key] ?? "" };
  return {
    [SECRET_KEYS.caCert]: signer.cert,
    [SECRET_KEYS.caKey]: signer.key,
    [SECRET_KEYS.cert]: servingPair.cert,
    [SECRET_KEYS.key]: servingPair.key,
    // the signing CA first, then the others kept (bundleOf puts the current CA first already)
    [SECRET_KEYS.bundle]: signer.cert + kept.replace(signer.cert, ""),
  };
}

/** The DNS names the apiserver may reach a Service by. */
export function serviceDnsNames(service: string, namespace: string): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}

const b64 = (text: string): string => Buffer.from(text, "utf8").toString("base64");
const unb64 = (text: unknown): string | undefined => (typeof text === "string" ? Buffer.from(text, "base64").toString("utf8") : undefined);

interface SecretObject {
  metadata: { name: string; namespace: string; resourceVersion?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  type?: string;
}

function dataOf(secret: SecretObject): TlsData {
  const out: TlsData = {};
  for (const key of Object.values(SECRET_KEYS)) {
    const value = unb64(secret.data?.[key]);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

function encoded(data: TlsData): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)]));
}

export interface TlsSecretRef {
  namespace: string;
  name: string;
}

const secretPath = (ref: TlsSecretRef, named = true): string =>
  `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/secrets${named ? `/${encodeURIComponent(ref.name)}` : ""}`;

/**
 * The Secret's data, renewed when due: created when absent, updated on the version read. A
 * conflict on either means another replica wrote first; its Secret is read again (and used when
 * current). Returns what the Secret holds after.
 */
export async function syncTlsSecret(kube: Kube, ref: TlsSecretRef, names: ServingNames, now: () => number): Promise<TlsData> {
  for (let attempt = 0; ; attempt++) {
    let secret: SecretObject | undefined;
    try {
      secret = await kubeJson<SecretObject>(kube.access, { path: secretPath(ref) });
    } catch (err) {
      if (!isKubeNotFound(err)) throw err;
    }
    const current = secret ? dataOf(secret) : {};
    const at = now();
    if (secret && !tlsDue(current, at, names)) return current;
    const { issuer } = await import("./issue.ts");
    const next = renewTls(current, at, names, issuer);
    try {
      if (!secret) {
        await kubeJson(kube.access, {
          method: "POST",
          path: secretPath(ref, false),
          body: {
            apiVersion: "v1",
            kind: "Secret",
            metadata: { name: ref.name, namespace: ref.namespace, labels: { "app.kubernetes.io/managed-by": "keyward" } },
            type: "Opaque",
            data: encoded(next),
          },
        });
      } else {
        await kubeJson(kube.access, {
          method: "PUT",
          path: secretPath(ref),
          body: { ...secret, data: { ...secret.data, ...encoded(next) } },
        });
      }
      return next;
    } catch (err) {
      // 409 on create (AlreadyExists) or update (Conflict): another replica wrote first.
      if (!isConflict(err) || attempt >= 3) throw err;
    }
  }
}

/** A CRD's spec.conversion.webhook.clientConfig, as read from the cluster. */
export interface ClientConfig {
  service?: { namespace?: string; name?: string };
  url?: string;
  caBundle?: string;
}

interface CrdObject {
  spec?: { conversion?: { strategy?: string; webhook?: { clientConfig?: ClientConfig } } };
}

/** Whether a CRD's webhook is this Service: another release's keyward keeps its own CRDs' bundle. */
export const callsService =
  (namespace: string, name: string) =>
  (config: ClientConfig): boolean =>
    config.service?.namespace === namespace && config.service.name === name;

/**
 * Writes `bundle` into the caBundle of each named CRD whose conversion goes to the webhook `ours`
 * recognizes, when it differs. Returns the CRDs written. A CRD not installed, converting without a
 * webhook or calling another one is left as it is: two keyward releases never overwrite each
 * other's bundle.
 */
export async function injectCaBundle(
  kube: Kube,
  crdNames: readonly string[],
  bundle: string,
  ours: (config: ClientConfig) => boolean,
): Promise<string[]> {
  const want = b64(bundle);
  const written: string[] = [];
  for (const name of crdNames) {
    const crd = (await getObject(kube, crdKind, { namespace: "", name })) as CrdObject | undefined;
    const conversion = crd?.spec?.conversion;
    const config = conversion?.webhook?.clientConfig;
    if (conversion?.strategy !== "Webhook" || !config || !ours(config) || config.caBundle === want) continue;
    await kubeJson(kube.access, {
      method: "PATCH",
      path: resourcePath(crdKind, undefined, name),
      contentType: MERGE_PATCH,
      body: { spec: { conversion: { webhook: { clientConfig: { caBundle: want } } } } },
    });
    written.push(name);
  }
  return written;
}
