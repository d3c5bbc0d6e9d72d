// Base-URL allow-lists (the --allowed-base-urls flag, a credentials Secret's
// keyward.dev/allowed-base-urls annotation), and which request paths join a base URL unchanged:
// pure, so config parsing, the resources and both HTTP clients share them.

/**
 * Whether `baseUrl` lies under one of `allowed`: the same scheme, host and port (the URL's
 * origin, so `https://svc.example.com.evil.test` is not `https://svc.example.com`), and a path
 * at or below the entry's path. User info and trailing slashes do not matter.
 */
export function baseUrlAllowed(baseUrl: string, allowed: readonly string[]): boolean {
  const target = parseUrl(baseUrl);
  if (!target) return false;
  return allowed.some((entry) => {
    const prefix = parseUrl(entry);
    if (!prefix || prefix.origin !== target.origin) return false;
    const base = trimSlash(prefix.pathname);
    const path = trimSlash(target.pathname);
    return base === "" || path === base || path.startsWith(`${base}/`);
  });
}

/** A comma-separated list of base URLs, as the flag and the annotation give it. */
export function parseBaseUrlList(text: string): string[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Why an entry of an allow-list is not a base URL; undefined when it is one. */
export function invalidBaseUrl(entry: string): string | undefined {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return `"${entry}" is not a URL`;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return `"${entry}" is not an http(s) URL`;
  if (url.search || url.hash) return `"${entry}" has a query or fragment`;
  return undefined;
}

function parseUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === "https:" || url.protocol === "http:" ? url : undefined;
  } catch {
    return undefined;
  }
}

function trimSlash(path: string): string {
  return path.replace(/\/+$/, "");
}

const PLAIN_PATH = /^(?:\/[A-Za-z0-9_~:@-][A-Za-z0-9._~:@-]*)+\/?$/;

/**
 * A path URL parsing leaves as it is: no escapes, query, fragment, dot segments or odd characters.
 * Such a path is appended to a parsed base URL's path as it stands, without a URL parse per
 * request (the apiserver's and the service's clients).
 */
export function isPlainPath(path: string): boolean {
  return PLAIN_PATH.test(path);
}
