// Which Secrets keyward may use as credentials, and where it may send them.
//
// A ProviderConfig names a Secret and a URL, and keyward sends the Secret's value to that URL as
// a bearer token. Without a check, anyone allowed to create a ProviderConfig could have keyward
// send any Secret of the namespace to a URL of their choosing, without the right to read that
// Secret themselves (a confused deputy). So a Secret is credentials only when whoever may write
// it said so, with the label CREDENTIALS_LABEL=true; and its token goes only where someone who
// decides that said it may go:
// - the Secret's own annotation ALLOWED_BASE_URLS_ANNOTATION (its writer pins the base URLs);
// - the cluster admin's list (--allowed-base-urls), a ceiling for every config when set, and
//   enough on its own for a Secret without the annotation; `*` alone allows every URL.
// With neither — the default — nothing is sent (BaseUrlNotAllowed): the author of a
// ProviderConfig can aim neither a Secret nor keyward itself (an internal address) anywhere.
// keyward never labels, annotates or puts a finalizer on a Secret that is not marked.
//
// May import: src/engine and src/lib; never a kind's file.
import type { KubeObject } from "../../engine/types.ts";
import { ReconcileError } from "../../engine/errors.ts";
import { keyString } from "../../kube/keys.ts";
import { baseUrlAllowed, parseBaseUrlList } from "../../lib/baseurl.ts";
import type { MetadataKey } from "../common.ts";

/** The label, set by someone who may write the Secret, that lets keyward use it as credentials. */
export const CREDENTIALS_LABEL = "keyward.dev/credentials";

/** The key of a credentials Secret holding the token when the reference names none. */
export const DEFAULT_CREDENTIALS_KEY = "token";
/** The label selector of the Secret cache: marked Secrets only. */
export const CREDENTIALS_SELECTOR = `${CREDENTIALS_LABEL}=true`;
/** On a marked Secret: the base URLs (comma-separated) its token may be sent to. */
export const ALLOWED_BASE_URLS_ANNOTATION = "keyward.dev/allowed-base-urls";
/** The admin's list `*` (alone): every base URL, whatever a Secret's annotation is missing. */
export const ALLOW_EVERY_BASE_URL = "*";

/** The keys a person sets on a credentials Secret (held in `where`) for keyward to use it. */
export function credentialsSecretKeys(where: string): MetadataKey[] {
  return [
    {
      key: CREDENTIALS_LABEL,
      what: "label",
      on: `the credentials Secret (${where})`,
      by: "user",
      doc: '"true" lets keyward read the Secret; keyward caches and uses only Secrets marked so (else CredentialsNotMarked).',
    },
    {
      key: ALLOWED_BASE_URLS_ANNOTATION,
      what: "annotation",
      on: `the credentials Secret (${where})`,
      by: "user",
      doc: "Comma-separated http(s) URLs the Secret's token may be sent to: baseUrl must lie at or below one of them (else BaseUrlNotAllowed). Without it, the token goes only where the chart's allowedBaseUrls allows.",
    },
  ];
}

export function isMarkedCredentials(secret: KubeObject): boolean {
  return secret.metadata.labels?.[CREDENTIALS_LABEL] === "true";
}

/**
 * The cluster admin's allow-list (--allowed-base-urls), checked before any Secret is read: when
 * set, a ceiling for every config. Empty leaves it to each Secret's annotation (tokenFrom).
 */
export function checkAllowedBaseUrl(configId: string, baseUrl: string, allowed: readonly string[]): void {
  if (allowed.length === 0 || allowed.includes(ALLOW_EVERY_BASE_URL) || baseUrlAllowed(baseUrl, allowed)) return;
  throw new ReconcileError(
    "BaseUrlNotAllowed",
    `${configId}: baseUrl ${baseUrl} is not among the base URLs this keyward may call (--allowed-base-urls: ${allowed.join(", ")})`,
    { retryable: false },
  );
}

/**
 * The token in a credentials Secret (key `token` unless named), if the Secret is marked for it
 * and `baseUrl` is allowed: among the base URLs the Secret pins when it pins any, and, when it
 * pins none, only if the admin's list `adminAllowed` (already checked by checkAllowedBaseUrl) is
 * set. Messages name the Secret, the label and the annotation, never a value of the Secret.
 */
export function tokenFrom(
  secret: KubeObject | undefined,
  where: { namespace: string; name: string; key?: string | undefined },
  baseUrl: string,
  adminAllowed: readonly string[],
): string {
  const key = where.key ?? DEFAULT_CREDENTIALS_KEY;
  const id = `Secret ${keyString(where)}`;
  if (!secret) throw new ReconcileError("CredentialsNotFound", `${id} does not exist`, { retryable: true });
  if (!isMarkedCredentials(secret)) {
    throw new ReconcileError(
      "CredentialsNotMarked",
      `${id} is not marked as credentials for keyward: someone who may edit it marks it with \`kubectl -n ${where.namespace} label secret ${where.name} ${CREDENTIALS_SELECTOR}\``,
      { retryable: false },
    );
  }
  const pinned = secret.metadata.annotations?.[ALLOWED_BASE_URLS_ANNOTATION];
  if (pinned !== undefined && !baseUrlAllowed(baseUrl, parseBaseUrlList(pinned))) {
    throw new ReconcileError(
      "BaseUrlNotAllowed",
      `${id} does not allow its token to be sent to ${baseUrl} (annotation ${ALLOWED_BASE_URLS_ANNOTATION})`,
      { retryable: false },
    );
  }
  if (pinned === undefined && adminAllowed.length === 0) {
    throw new ReconcileError(
      "BaseUrlNotAllowed",
      `${id} does not say where its token may be sent, and this keyward has no --allowed-base-urls: someone who may edit the Secret pins it with \`kubectl -n ${where.namespace} annotate secret ${where.name} ${ALLOWED_BASE_URLS_ANNOTATION}=${baseUrl}\`, or the cluster admin sets --allowed-base-urls (chart value allowedBaseUrls)`,
      { retryable: false },
    );
  }
  const encoded = (secret as { data?: Record<string, string> }).data?.[key];
  if (!encoded) throw new ReconcileError("CredentialsNotFound", `${id} has no key ${key}`, { retryable: true });
  return Buffer.from(encoded, "base64").toString("utf8").trim();
}
