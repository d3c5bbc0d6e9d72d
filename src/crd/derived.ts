// Files derived from the kind registry besides the CRDs (`npm run generate` writes them, a test
// fails when one is stale): the kubectl plugin's constants, the reason tables of the Argo CD health
// check, docs/kinds.md, the API reference (docs/reference/api*.md) and the destination pages' options. Each generated part sits between marker lines in a file that is
// otherwise written by hand, or is a whole generated file.
import type { ReasonInfo } from "../engine/kind.ts";
import type { Kind } from "../resources/kind.ts";
import { ANNOTATION_EXTERNAL_ID } from "../engine/holder.ts";
import { ANNOTATION_PAUSED, HANDLED_PREFIX } from "../engine/meta.ts";
import { CREATE_GUARD_ANNOTATIONS } from "../engine/create-rule.ts";
import { DRAIN_LABEL, SHARD_LABEL } from "../shard/plan.ts";
import { apiReference, apiReferencePages } from "./reference.ts";
import { destinationOptions, destinationPage, destinationsIndex, destinationsOf, destinationsTable } from "./destinations-doc.ts";
import { structuralSchema } from "./schema.ts";
import { crdFromSources } from "./crd.ts";
import { REQUEST_TIME } from "../lib/request-time.ts";
import { convertObject } from "../lib/conversion.ts";

export const pluginFile = "bin/kubectl-keyward.cjs";
export const healthFile = "argocd/health.lua";
export const kindsDocFile = "docs/kinds.md";

type Registry = ReadonlyMap<string, ReasonInfo & { kinds: string[] }>;

const begin = (comment: string, name: string): string =>
  `${comment} BEGIN generated${name ? ` ${name}` : ""} by \`npm run generate\` from src/resources/registry.ts; do not edit`;
const end = (comment: string, name: string): string => `${comment} END generated${name ? ` ${name}` : ""}`;

/**
 * `text` with the lines between its marker lines (`<comment> BEGIN generated [name] ...` and
 * `<comment> END generated [name]`, each on a line of its own, indented as the file needs) replaced
 * by `body`; throws when the markers are missing. `close` ends the END line of a comment that needs
 * closing (` -->` in Markdown).
 */
export function replaceGenerated(text: string, comment: string, body: string, name = "", close = ""): string {
  const from = text.indexOf(begin(comment, name));
  const to = text.indexOf(`${end(comment, name)}${close}\n`, Math.max(from, 0));
  if (from < 0 || to < from) throw new Error(`no generated section (${begin(comment, name)} ... ${end(comment, name)})`);
  const bodyStart = text.indexOf("\n", from) + 1;
  const bodyEnd = text.lastIndexOf("\n", to) + 1;
  return `${text.slice(0, bodyStart)}${body}${text.slice(bodyEnd)}`;
}

/** A YAML block sequence of `items`, one per line at `indent` spaces. */
function yamlList(items: readonly string[], indent: number): string {
  return items.map((item) => `${" ".repeat(indent)}- ${item}\n`).join("");
}

/** The plurals of the namespaced kinds, which keyward's roles and the aggregated user roles name. */
function namespacedPlurals(kinds: readonly Kind[]): string[] {
  return kinds.filter((k) => k.ref.clusterScoped !== true).map((k) => k.ref.plural);
}

/** The RBAC lists of the chart and config/rbac: the namespaced kinds, and their status subresources. */
function rbacFile(path: string, lists: readonly { name: string; indent: number; status: boolean }[], kinds: readonly Kind[]): DerivedFile {
  const plurals = namespacedPlurals(kinds);
  return {
    path,
    render: (cur) =>
      lists.reduce(
        (text, l) => replaceGenerated(text, "#", yamlList(l.status ? plurals.map((p) => `${p}/status`) : plurals, l.indent), l.name),
        need(path, cur),
      ),
  };
}

/** A hand-written Markdown page with a generated part between `<!-- BEGIN generated <name> ... -->` and `<!-- END generated <name> -->`. */
function markdownPart(path: string, name: string, body: () => string): DerivedFile {
  // A blank line before the END marker ends the generated table for every Markdown reader.
  return { path, render: (cur) => replaceGenerated(need(path, cur), "<!--", `${body()}\n`, name, " -->") };
}

function need(path: string, current: string | undefined): string {
  if (current === undefined) throw new Error(`${path} is missing`);
  return current;
}

/**
 * The status field holding a kind's external id in each version it is served in, as the kind's own
 * conversion renames it (v1beta1 spells the initialism in capitals: projectId → projectID).
 */
function externalIdFields(kind: Kind, field: string): Record<string, string> {
  const { from, to } = kind.conversion;
  const probe = "\u0000external-id";
  const stored = { apiVersion: `${kind.ref.group}/${from}`, kind: kind.ref.kind, metadata: { name: "probe" }, status: { [field]: probe } };
  return Object.fromEntries(
    [...new Set([from, to])].map((version) => {
      const status = (convertObject(stored, kind.conversion, version).status ?? {}) as Record<string, unknown>;
      const named = Object.keys(status).find((key) => status[key] === probe);
      if (named === undefined) throw new Error(`${kind.ref.kind} ${version}: the conversion drops status.${field}`);
      return [version, named];
    }),
  );
}

/**
 * The plugin's constants: API group, annotations, kinds in display order, service ids, actions, and
 * what `export` keeps (the external-id pin) and drops (the ledger of handled values, create guard,
 * shard labels).
 */
export function pluginConstants(kinds: readonly Kind[], paused: string): string {
  const group = kinds[0]?.ref.group ?? "";
  const serviceIds = Object.fromEntries(kinds.flatMap((k) => (k.serviceIdFields ? [[k.ref.kind, k.serviceIdFields]] : [])));
  const actions = Object.assign({}, ...kinds.map((k) => k.actions ?? {})) as Record<string, unknown>;
  const externalIds = Object.fromEntries(
    kinds.flatMap((k) => (k.externalId !== undefined ? [[k.ref.kind, externalIdFields(k, k.externalId)]] : [])),
  );
  const observeOnly = kinds
    .filter((k) => structuralSchema(k.crd.spec).properties?.["managementPolicy"] !== undefined)
    .map((k) => k.ref.kind);
  const json = (value: unknown): string => JSON.stringify(value, null, 2);
  return [
    `const GROUP = ${JSON.stringify(group)};`,
    `const PAUSED = ${JSON.stringify(paused)};`,
    "/** The label naming the replica that reconciles an object, with sharding on. */",
    `const SHARD_LABEL = ${JSON.stringify(SHARD_LABEL)};`,
    "/** Kinds in the order `status` lists them (the registry's order); kinds not listed follow in alphabetical order. */",
    `const KIND_ORDER = ${json(kinds.map((k) => k.ref.kind))};`,
    "/** The status fields holding each kind's id at the service. */",
    `const SERVICE_ID = ${json(serviceIds)};`,
    "/** The on-demand actions, by verb: the annotation that requests one and the status fields that follow it. */",
    `const ACTIONS = ${json(actions)};`,
    "/** The annotation holding an object's id at the service (mirrors the kind's EXTERNAL_ID_FIELD). */",
    `const EXTERNAL_ID = ${JSON.stringify(ANNOTATION_EXTERNAL_ID)};`,
    "/** The status field EXTERNAL_ID mirrors, by kind and version: what an object from an older keyward has only there. */",
    `const EXTERNAL_ID_FIELD = ${json(externalIds)};`,
    "/** The prefix of keyward's ledger of handled action values: rewritten at every action, a backup's to keep, never Git's. */",
    `const HANDLED_PREFIX = ${JSON.stringify(HANDLED_PREFIX)};`,
    "/** The kinds whose spec.managementPolicy ObserveOnly keeps keyward from writing to the service (export --observe-only). */",
    `const OBSERVE_ONLY_KINDS = ${json(observeOnly)};`,
    "/** A request value the service's record can answer for on a rebuild: a time (src/lib/request-time.ts). */",
    `const REQUEST_TIME = new RegExp(${JSON.stringify(REQUEST_TIME.source)}, ${JSON.stringify(REQUEST_TIME.flags)});`,
    "/** keyward's create guard: marks of a create in flight on this cluster, never carried to another. */",
    `const CREATE_GUARD = ${json(CREATE_GUARD_ANNOTATIONS)};`,
    "/** The marks of a call in flight on this cluster (the kinds' inFlight metadata keys): in Git one would come back after every call. */",
    `const IN_FLIGHT = ${json(
      kinds
        .flatMap((k) => k.metadata ?? [])
        .filter((m) => m.inFlight === true)
        .map((m) => m.key),
    )};`,
    "/** The labels keyward writes for sharding (with SHARD_LABEL), which belong to this cluster's replicas. */",
    `const SHARD_LABELS = ${json([SHARD_LABEL, DRAIN_LABEL])};`,
    "/** keyward's CRDs, by name: the version each serves and stores, and the fields of its spec (what `check` compares with the cluster's). */",
    `const CRDS = ${json(crdFingerprints(kinds))};`,
    "/** The label and the annotation a credentials Secret needs (`check`'s hints). */",
    `const CREDENTIALS_LABEL = ${JSON.stringify(credentialsSecretKey(kinds, "label"))};`,
    `const ALLOWED_BASE_URLS = ${JSON.stringify(credentialsSecretKey(kinds, "annotation"))};`,
    "/** The access keyward's ServiceAccount needs, by what needs it (`check` asks the cluster for each; the chart's roles grant them). */",
    `const RBAC = ${json(controllerGrants(kinds))};`,
    "",
  ].join("\n");
}

interface Grant {
  group: string;
  resource: string;
  verbs: string[];
}

/**
 * What keyward's ServiceAccount must be granted, as the chart's roles grant it (test/unit/chart's
 * rbac-audit ties those to the calls in src/): `workload` in every watched namespace,
 * `secretWriter` where AccessTokens write, `clusterProviderConfigs` cluster-wide with them on and
 * `credentials` in their credentials namespace, `holders` in the release namespace. The leader
 * election's grants depend on the Lease's name: the plugin adds them.
 */
function controllerGrants(kinds: readonly Kind[]): Record<string, Grant[]> {
  const group = kinds[0]?.ref.group ?? "";
  const plurals = namespacedPlurals(kinds);
  const clusterPlurals = kinds.filter((k) => k.ref.clusterScoped === true).map((k) => k.ref.plural);
  const read = ["get", "list", "watch"];
  const status = ["get", "patch", "update"];
  return {
    workload: [
      ...plurals.map((resource) => ({ group, resource, verbs: [...read, "patch", "update"] })),
      ...plurals.map((p) => ({ group, resource: `${p}/status`, verbs: status })),
      // Only an AccessToken owns something: the Secret it issues into, with blockOwnerDeletion.
      { group, resource: "accesstokens/finalizers", verbs: ["update"] },
      { group: "", resource: "secrets", verbs: [...read, "patch"] },
      { group: "", resource: "events", verbs: ["create", "patch"] },
    ],
    secretWriter: [{ group: "", resource: "secrets", verbs: ["create", "patch", "delete"] }],
    clusterProviderConfigs: [
      ...clusterPlurals.map((resource) => ({ group, resource, verbs: read })),
      ...clusterPlurals.map((p) => ({ group, resource: `${p}/status`, verbs: status })),
      { group: "", resource: "namespaces", verbs: read },
    ],
    credentials: [{ group: "", resource: "secrets", verbs: read }],
    // The claim rule's locks (src/engine/holder.ts), Leases of the release namespace.
    holders: [{ group: "coordination.k8s.io", resource: "leases", verbs: ["get", "list", "create", "update", "delete"] }],
  };
}

/** The label or the annotation a person sets on a provider config's credentials Secret, from the kinds' metadata keys. */
function credentialsSecretKey(kinds: readonly Kind[], what: "label" | "annotation"): string {
  const key = kinds
    .flatMap((k) => k.metadata ?? [])
    .find((m) => m.what === what && m.by === "user" && m.on?.startsWith("the credentials Secret") === true)?.key;
  if (key === undefined) throw new Error(`no kind names the ${what} of its credentials Secret`);
  return key;
}

/** Each kind's CRD name, its version and the top-level fields of its spec. */
function crdFingerprints(kinds: readonly Kind[]): Record<string, { version: string; specFields: string[] }> {
  return Object.fromEntries(
    kinds.map((k) => {
      const crd = crdFromSources(k.crd);
      const version = crd.spec.versions[0];
      const spec = version?.schema?.openAPIV3Schema?.properties?.["spec"]?.properties ?? {};
      return [crd.metadata.name, { version: version?.name ?? "", specFields: Object.keys(spec).sort() }];
    }),
  );
}

/** Lua tables of the reasons Argo CD shows as Progressing: keyward's retrying ones and its progress ones. */
export function healthTables(registry: Registry): string {
  const names = (means: ReasonInfo["means"]): string[] =>
    [...registry]
      .filter(([, r]) => r.means === means)
      .map(([n]) => n)
      .sort();
  const table = (name: string, reasons: string[]): string => `local ${name} = {\n${reasons.map((r) => `  ${r} = true,`).join("\n")}\n}`;
  return [
    "-- Reasons keyward retries by itself, or that clear once another object in the same sync",
    "-- appears or becomes ready: not worth a human's attention yet (registry: retrying).",
    table("transient", names("retrying")),
    "-- Ready=False reasons of normal progress (registry: progress).",
    table("progressing", names("progress")),
    "-- Synced=False reasons of a keyward told to stand still (registry: argoCd Suspended).",
    table(
      "suspended",
      [...registry]
        .filter(([, r]) => r.argoCd === "Suspended")
        .map(([n]) => n)
        .sort(),
    ),
    "",
  ].join("\n");
}

const meaningText: Record<ReasonInfo["means"], string> = {
  available: "Ready / Synced True",
  progress: "on its way (Normal Event; Argo CD Progressing)",
  retrying: "retried by keyward (Warning Event; Argo CD Progressing)",
  failed: "needs a person (Warning Event; Argo CD Degraded)",
  done: "Event: what keyward did",
};

/** The "means" cell of docs/kinds.md: the Event and the Argo CD health the reason gets. */
const meaningOf = (r: ReasonInfo): string =>
  r.argoCd === "Suspended" ? "stands still until told otherwise (Normal Event; Argo CD Suspended)" : meaningText[r.means];

/** The "where" cell: a reason of standing still is written only by the kinds that can be paused. */
const whereOf = (r: ReasonInfo & { kinds: string[] }, kinds: readonly Kind[]): string =>
  r.argoCd === "Suspended"
    ? kinds
        .filter((k) => kindView(k).pausable)
        .map((k) => k.ref.kind)
        .join(", ")
    : r.kinds.join(", ");

const cell = (text: string): string => text.replaceAll("|", "\\|");

/** What `kubectl get` and the conditions of a kind show, from its descriptor: what docs/kinds.md tells. */
export interface KindView {
  /** The condition types its printer columns show (keyward writes no other). */
  conditions: string[];
  /** The columns of `kubectl get`, and those `-o wide` adds (priority 1). */
  columns: string[];
  wide: string[];
  /** Whether it honours keyward.dev/paused (its descriptor lists the annotation). */
  pausable: boolean;
}

export function kindView(k: Kind): KindView {
  const columns = k.crd.printerColumns;
  const conditions = new Set(
    columns.flatMap((c) => {
      const m = /^\.status\.conditions\[\?\(@\.type=="([A-Za-z]+)"\)\]\.status$/.exec(c.jsonPath);
      return m?.[1] ? [m[1]] : [];
    }),
  );
  return {
    conditions: [...conditions],
    columns: ["Name", ...columns.filter((c) => (c.priority ?? 0) === 0).map((c) => c.name)],
    wide: columns.filter((c) => (c.priority ?? 0) > 0).map((c) => c.name),
    pausable: (k.metadata ?? []).some((m) => m.key === ANNOTATION_PAUSED && m.what === "annotation"),
  };
}

/** docs/kinds.md: every kind and every reason, from the registry. */
export function kindsDoc(kinds: readonly Kind[], registry: Registry): string {
  const lines = [
    "<!-- Generated by `npm run generate` from src/resources/registry.ts; do not edit. -->",
    "# keyward's kinds and reasons",
    "",
    "Every kind keyward serves, from its descriptor (`src/resources/<kind>.ts`), and every reason its",
    "conditions and Events carry. The Argo CD health check (argocd/health.lua) and the kubectl",
    "plugin's constants are derived from the same registry.",
    "",
    "| kind | scope | short names | refers to | id at the service | own reasons |",
    "|---|---|---|---|---|---|",
    ...kinds.map((k) => {
      const refers = [k.refers.providerConfig ? "provider config" : "", k.refers.project ? "Project" : ""].filter(Boolean).join(", ");
      return `| ${k.ref.kind} | ${k.ref.clusterScoped ? "Cluster" : "Namespaced"} | ${(k.crd.shortNames ?? []).join(", ")} | ${refers || "—"} | ${(k.serviceIdFields ?? []).join(", ") || "—"} | ${Object.keys(k.reasons).join(", ") || "—"} |`;
    }),
    "",
    "What each kind shows: its conditions, the columns of `kubectl get` and those `-o wide` adds,",
    "and whether it honours the `keyward.dev/paused` annotation (only the kinds that write to the",
    "service have a Synced condition and can be paused; provider configs have Ready alone).",
    "",
    "| kind | conditions | columns | `-o wide` adds | keyward.dev/paused |",
    "|---|---|---|---|---|",
    ...kinds.map((k) => {
      const view = kindView(k);
      return `| ${k.ref.kind} | ${view.conditions.join(", ")} | ${view.columns.join(", ")} | ${view.wide.join(", ") || "—"} | ${view.pausable ? "honoured" : "ignored"} |`;
    }),
    "",
    "## Reasons",
    "",
    "| reason | means | where | what |",
    "|---|---|---|---|",
    ...[...registry]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, r]) => `| ${name} | ${meaningOf(r)} | ${whereOf(r, kinds)} | ${cell(r.doc)} |`),
    "",
  ];
  return lines.join("\n");
}

export interface DerivedFile {
  path: string;
  /** The file's new text, given its current text (undefined: absent). */
  render(current: string | undefined): string;
}

export function derivedFiles(kinds: readonly Kind[], registry: Registry, paused: string): DerivedFile[] {
  const kindsList = { name: "kinds", status: false };
  const statusList = { name: "status", status: true };
  return [
    rbacFile(
      "charts/keyward/templates/_helpers.tpl",
      [
        { ...kindsList, indent: 4 },
        { ...statusList, indent: 4 },
      ],
      kinds,
    ),
    rbacFile(
      "charts/keyward/templates/aggregate-roles.yaml",
      [
        { name: "edit", status: false, indent: 6 },
        { name: "view", status: false, indent: 6 },
        { name: "view status", status: true, indent: 6 },
      ],
      kinds,
    ),
    rbacFile(
      "config/rbac/role.yaml",
      [
        { ...kindsList, indent: 6 },
        { ...statusList, indent: 6 },
      ],
      kinds,
    ),
    rbacFile("config/rbac/aggregate_edit_role.yaml", [{ name: "edit", status: false, indent: 6 }], kinds),
    rbacFile(
      "config/rbac/aggregate_view_role.yaml",
      [
        { name: "view", status: false, indent: 6 },
        { name: "view status", status: true, indent: 6 },
      ],
      kinds,
    ),
    { path: pluginFile, render: (cur) => replaceGenerated(need(pluginFile, cur), "//", pluginConstants(kinds, paused)) },
    { path: healthFile, render: (cur) => replaceGenerated(need(healthFile, cur), "--", healthTables(registry)) },
    { path: kindsDocFile, render: () => kindsDoc(kinds, registry) },
    ...apiReferencePages(kinds).map((page) => ({ path: page.path, render: () => apiReference(kinds, page) })),
    markdownPart(destinationsIndex, "destinations", () => destinationsTable(kinds)),
    ...destinationsOf(kinds).map((d) => markdownPart(destinationPage(d), "options", () => destinationOptions(kinds, d))),
  ];
}
