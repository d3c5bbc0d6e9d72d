#!/usr/bin/env node
// kubectl-keyward: the kubectl plugin of keyward (its README, section "kubectl plugin").
//
// One self-contained file: Node.js (18 or newer) and the `kubectl` every plugin user has, nothing
// else. It runs kubectl for every read and write, so the user's kubeconfig, context, credentials
// and RBAC apply exactly as they do to kubectl. Install it by copying this file onto PATH as
// `kubectl-keyward` (mode 0755), with `npm install -g`, or through a krew manifest.
//
// CommonJS on purpose: a copy without its extension outside any package is read by every Node
// version as CommonJS, where ESM would depend on the Node version's module detection.
"use strict";

const { spawn } = require("node:child_process");
const { parseArgs } = require("node:util");

const GROUP = "keyward.dev";
const SYNC_RESOURCE = `secretsyncs.${GROUP}`;
const PAUSED = `${GROUP}/paused`;

/** Exit codes, documented in --help. */
const EXIT = { ok: 0, failed: 1, usage: 2, notFound: 3, timeout: 4 };

/** The two on-demand actions of a SecretSync (src/resources/secretsync.ts). */
const ACTIONS = {
  sync: {
    annotation: `${GROUP}/sync-requested-at`,
    handled: "lastHandledSyncRequest",
    operation: "sync-secrets",
    job: "sync",
    status: "syncStatus",
    jobId: "lastSyncJobId",
    at: "lastSyncedAt",
    message: "lastSyncMessage",
  },
  "remove-secrets": {
    annotation: `${GROUP}/remove-secrets-requested-at`,
    handled: "lastHandledRemoveSecretsRequest",
    operation: "remove-secrets",
    job: "remove-secrets",
    status: "removeStatus",
    jobId: "lastRemoveJobId",
    at: "lastRemovedAt",
    message: "lastRemoveMessage",
  },
};

const USAGE = `kubectl keyward: request and follow keyward's actions, and see every keyward resource at a glance.

Usage:
  kubectl keyward sync <secretsync> [--wait [--timeout 5m]] [-n NAMESPACE]
      Run a sync now: sets keyward.dev/sync-requested-at to a fresh value. keyward calls the
      service's sync-secrets once for that value. With --wait, follows the SecretSync's status
      until the job started for that value settles; a failed job exits 1 with the service's message.
  kubectl keyward remove-secrets <secretsync> [--wait [--timeout 5m]] [-n NAMESPACE]
      The same for keyward.dev/remove-secrets-requested-at: remove the synced secrets from the
      destination.
  kubectl keyward status [-n NAMESPACE | -A]
      One table of every keyward resource: kind, namespace, name, Ready, reason, service id and
      last sync. -A: every namespace, and the cluster-scoped kinds too.

Options:
  -n, --namespace NAME   the namespace (default: the current context's)
  -A, --all-namespaces   status: every namespace and the cluster-scoped kinds
      --wait             sync, remove-secrets: wait until the job settles
      --timeout DURATION how long --wait waits (default 5m; 90s, 10m, 1h, or seconds)
      --kubeconfig PATH, --context NAME, --cluster NAME, --user NAME
                         passed to kubectl, as kubectl takes them
  -h, --help             this help

Every read and write goes through kubectl (the KUBECTL environment variable names another
binary), with your kubeconfig, context and permissions.

Exit codes: 0 done; 1 the job failed, or kubectl or the cluster failed; 2 usage error;
3 the SecretSync (or keyward's CRDs) not found; 4 --wait timed out.
`;

class CliError extends Error {
  /** @param {string} message @param {number} code */
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

// ---------------------------------------------------------------- arguments

/**
 * @typedef {{ namespace?: string; allNamespaces: boolean; wait: boolean; timeoutMs?: number;
 *   kubeFlags: string[]; help: boolean; positionals: string[] }} Args
 */

/** @param {string} text @returns {number} milliseconds */
function parseDuration(text) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new CliError(`invalid --timeout ${JSON.stringify(text)}: use a duration such as 90s, 5m or 1h`, EXIT.usage);
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? "s"] ?? 1000;
  const ms = n * unit;
  if (ms <= 0) throw new CliError(`invalid --timeout ${JSON.stringify(text)}: it must be more than 0`, EXIT.usage);
  return ms;
}

/** @param {string[]} argv @returns {Args} */
function parseCommandLine(argv) {
  /** @type {ReturnType<typeof parseArgs>} */
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        namespace: { type: "string", short: "n" },
        "all-namespaces": { type: "boolean", short: "A" },
        wait: { type: "boolean" },
        timeout: { type: "string" },
        kubeconfig: { type: "string" },
        context: { type: "string" },
        cluster: { type: "string" },
        user: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    throw new CliError(err instanceof Error ? err.message : String(err), EXIT.usage);
  }
  const v = parsed.values;
  /** @param {string} key @returns {string | undefined} */
  const str = (key) => {
    const value = v[key];
    return typeof value === "string" ? value : undefined;
  };
  /** @type {string[]} */
  const kubeFlags = [];
  for (const flag of ["kubeconfig", "context", "cluster", "user"]) {
    const value = str(flag);
    if (value !== undefined) kubeFlags.push(`--${flag}=${value}`);
  }
  const namespace = str("namespace");
  if (namespace === "") throw new CliError("--namespace must not be empty", EXIT.usage);
  const timeout = str("timeout");
  return {
    ...(namespace !== undefined ? { namespace } : {}),
    allNamespaces: v["all-namespaces"] === true,
    wait: v.wait === true,
    ...(timeout !== undefined ? { timeoutMs: parseDuration(timeout) } : {}),
    kubeFlags,
    help: v.help === true,
    positionals: parsed.positionals,
  };
}

// ---------------------------------------------------------------- kubectl

/** @typedef {{ code: number; stdout: string; stderr: string }} Run */

/** @param {Args} args @param {string[]} kubectlArgs @returns {Promise<Run>} */
function kubectl(args, kubectlArgs) {
  const bin = process.env.KUBECTL || "kubectl";
  return new Promise((resolve, reject) => {
    const child = spawn(bin, [...args.kubeFlags, ...kubectlArgs], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk) => (stderr += chunk));
    child.on("error", (err) => {
      const enoent = /** @type {NodeJS.ErrnoException} */ (err).code === "ENOENT";
      reject(
        new CliError(
          enoent ? `${bin} not found: put kubectl on PATH or set KUBECTL to its path` : `could not run ${bin}: ${err.message}`,
          EXIT.failed,
        ),
      );
    });
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** kubectl's message without its "Error from server (X): " prefix. @param {string} stderr */
function kubectlMessage(stderr) {
  const lines = stderr
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("Warning:"));
  // client-go's log lines (E1124 00:11:15.395242 ...) repeat what kubectl then says in words.
  const plain = lines.filter((l) => !/^[IWEF]\d{4} \d\d:\d\d:\d\d/.test(l));
  return (plain.length > 0 ? plain : lines).join("; ") || "kubectl failed without a message";
}

/** @param {string} stderr */
const isNotFound = (stderr) => /\(NotFound\)|not found/.test(stderr) && !/doesn't have a resource type|no matches for kind/.test(stderr);
/** @param {string} stderr */
const noSuchType = (stderr) => /doesn't have a resource type|no matches for kind|could not find the requested resource/.test(stderr);

/** @param {Args} args */
const nsFlags = (args) => (args.namespace !== undefined ? ["--namespace", args.namespace] : []);

/**
 * @typedef {{ type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }} Condition
 * @typedef {{ kind?: string; metadata: { name: string; namespace?: string; annotations?: Record<string, string>; resourceVersion?: string };
 *   status?: Record<string, unknown> & { conditions?: Condition[] } }} KubeObject
 */

/** The SecretSync, or a CliError naming what is missing. @param {Args} args @param {string} name @returns {Promise<KubeObject>} */
async function getSecretSync(args, name) {
  const r = await kubectl(args, ["get", SYNC_RESOURCE, name, "--output", "json", ...nsFlags(args)]);
  if (r.code === 0) return /** @type {KubeObject} */ (JSON.parse(r.stdout));
  if (noSuchType(r.stderr))
    throw new CliError(`keyward's CRDs are not installed in this cluster: it has no ${SYNC_RESOURCE}`, EXIT.notFound);
  if (isNotFound(r.stderr)) {
    const where = args.namespace !== undefined ? `namespace "${args.namespace}"` : "the current context's namespace";
    throw new CliError(`SecretSync "${name}" not found in ${where}`, EXIT.notFound);
  }
  throw new CliError(`could not read SecretSync "${name}": ${kubectlMessage(r.stderr)}`, EXIT.failed);
}

// ---------------------------------------------------------------- sync, remove-secrets

/** @param {Condition[] | undefined} conditions @param {string} type */
const conditionOf = (conditions, type) => (conditions ?? []).find((c) => c.type === type);

/** @param {unknown} v @returns {string | undefined} */
const text = (v) => (typeof v === "string" && v !== "" ? v : undefined);

/** @param {number} ms */
function formatDuration(ms) {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  return `${ms / 1000}s`;
}

/** @param {string} line */
const progress = (line) => process.stderr.write(`${line}\n`);

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sets the action's annotation to a fresh value and, with --wait, follows the SecretSync until
 * the job keyward started for that value settles.
 * @param {Args} args @param {keyof typeof ACTIONS} actionName
 */
async function requestAction(args, actionName) {
  const action = ACTIONS[actionName];
  if (args.allNamespaces) throw new CliError(`${actionName} works on one SecretSync: -A does not apply`, EXIT.usage);
  if (args.timeoutMs !== undefined && !args.wait) throw new CliError("--timeout applies only with --wait", EXIT.usage);
  if (args.positionals.length !== 1) {
    throw new CliError(`${actionName} takes exactly one SecretSync name (got ${args.positionals.length})`, EXIT.usage);
  }
  const raw = args.positionals[0] ?? "";
  const name = raw.replace(/^(secretsyncs?|kwsync)(\.keyward\.dev)?\//, "");
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) throw new CliError(`invalid SecretSync name ${JSON.stringify(raw)}`, EXIT.usage);

  const before = await getSecretSync(args, name);
  const namespace = before.metadata.namespace ?? args.namespace ?? "";
  const nsArgs = { ...args, namespace };
  let value = new Date().toISOString();
  if (before.metadata.annotations?.[action.annotation] === value) value = `${value}-1`;
  const r = await kubectl(nsArgs, ["annotate", SYNC_RESOURCE, name, `${action.annotation}=${value}`, "--overwrite", ...nsFlags(nsArgs)]);
  if (r.code !== 0) {
    if (isNotFound(r.stderr)) throw new CliError(`SecretSync "${name}" not found in namespace "${namespace}"`, EXIT.notFound);
    throw new CliError(`could not annotate SecretSync "${name}": ${kubectlMessage(r.stderr)}`, EXIT.failed);
  }
  process.stdout.write(`secretsync.${GROUP}/${name} ${actionName} requested (${action.annotation}=${value})\n`);
  if (before.metadata.annotations?.[PAUSED] === "true") {
    progress(`warning: ${namespace}/${name} is paused (${PAUSED}=true): keyward acts on the request only once that annotation is removed`);
  }
  if (!args.wait) return;
  await waitForJob(nsArgs, name, action, actionName, value, before);
}

/**
 * @param {Args} args @param {string} name @param {typeof ACTIONS[keyof typeof ACTIONS]} action
 * @param {string} actionName @param {string} value @param {KubeObject} before
 */
async function waitForJob(args, name, action, actionName, value, before) {
  const timeoutMs = args.timeoutMs ?? 5 * 60_000;
  const deadline = Date.now() + timeoutMs;
  const base = before.status ?? {};
  const ref = `${args.namespace ?? ""}/${name}`;
  /** The job id (or "") seen pending/running once the request was handled: V's job. */
  /** @type {string | undefined} */
  let seenActive;
  let handledSeen = false;
  let lastNote = "";
  for (;;) {
    /** What is awaited, for the timeout's message. */
    let state;
    /** @type {KubeObject} */
    let obj;
    try {
      obj = await getSecretSync(args, name);
    } catch (err) {
      if (err instanceof CliError && err.code === EXIT.notFound)
        throw new CliError(`SecretSync ${ref} was deleted while waiting`, EXIT.notFound);
      throw err;
    }
    const s = obj.status ?? {};
    const current = obj.metadata.annotations?.[action.annotation];
    if (s[action.handled] !== value) {
      if (current !== value) {
        throw new CliError(
          `${action.annotation} of ${ref} was changed to ${JSON.stringify(current ?? null)} by someone else before keyward handled ${value}; not waiting`,
          EXIT.failed,
        );
      }
      const synced = conditionOf(s.conditions, "Synced");
      const note =
        synced && synced.status !== "True" ? `keyward: Synced=${synced.status} ${synced.reason ?? ""}: ${synced.message ?? ""}` : "";
      if (note !== "" && note !== lastNote) progress(note);
      lastNote = note;
      state = `keyward has not handled the request yet${note ? ` (${note})` : ""}`;
    } else {
      const status = text(s[action.status]);
      const jobId = text(s[action.jobId]) ?? "";
      if (!handledSeen) {
        progress(`keyward called ${action.operation}; the ${action.job} job is ${status ?? "not reported yet"}`);
        handledSeen = true;
      }
      if (status === "pending" || status === "running") {
        seenActive ??= jobId;
        state = `the ${action.job} job is ${status}`;
      } else if (status === "succeeded" || status === "failed") {
        // V's job: one seen active after the request was handled, or (if it settled before the
        // first look) one other than the job that had settled before the request.
        const moved = jobId !== (text(base[action.jobId]) ?? "") || text(s[action.at]) !== text(base[action.at]);
        if (seenActive !== undefined || moved) {
          const id = jobId ? ` ${jobId}` : "";
          if (status === "failed") {
            const message = text(s[action.message]) ?? "the service gave no message";
            throw new CliError(`the ${action.job} job${id} of SecretSync ${ref} failed: ${message}`, EXIT.failed);
          }
          process.stdout.write(
            `the ${action.job} job${id} of SecretSync ${ref} succeeded${text(s[action.at]) ? ` at ${String(s[action.at])}` : ""}\n`,
          );
          return;
        }
        state = `waiting for the ${action.job} job to start`;
      } else {
        state = `the ${action.job} job's status is ${status ?? "not reported yet"}`;
      }
    }
    const left = deadline - Date.now();
    if (left <= 0)
      throw new CliError(
        `timed out after ${formatDuration(timeoutMs)} waiting for the ${actionName} of SecretSync ${ref}: ${state}`,
        EXIT.timeout,
      );
    await sleep(Math.min(1000, left));
  }
}

// ---------------------------------------------------------------- status

/** Preferred order of kinds in the table; kinds not listed follow in alphabetical order. */
const KIND_ORDER = [
  "ProviderConfig",
  "ClusterProviderConfig",
  "Project",
  "ProjectMembership",
  "AccessToken",
  "CertificateProfile",
  "SecretSync",
];

/** The status field holding each kind's id at the service. */
const SERVICE_ID = {
  Project: ["projectId"],
  SecretSync: ["syncId"],
  ProjectMembership: ["membershipId", "groupMembershipId"],
  AccessToken: ["tokenId"],
  CertificateProfile: ["profileId"],
};

/** @typedef {{ resource: string; kind: string; namespaced: boolean }} ApiResource */

/** Every resource type of the keyward.dev API group the cluster serves. @param {Args} args @returns {Promise<ApiResource[]>} */
async function keywardResources(args) {
  const r = await kubectl(args, ["api-resources", `--api-group=${GROUP}`, "--no-headers"]);
  if (r.code !== 0) throw new CliError(`could not list the cluster's resource types: ${kubectlMessage(r.stderr)}`, EXIT.failed);
  // NAME [SHORTNAMES] APIVERSION NAMESPACED KIND: read from both ends, SHORTNAMES may be empty.
  const found = r.stdout
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f.length >= 4)
    .map((f) => ({ resource: `${f[0] ?? ""}.${GROUP}`, kind: f[f.length - 1] ?? "", namespaced: f[f.length - 2] === "true" }));
  if (found.length === 0)
    throw new CliError(`keyward's CRDs are not installed in this cluster: it serves no resource of the ${GROUP} API group`, EXIT.notFound);
  const rank = (/** @type {string} */ kind) => (KIND_ORDER.includes(kind) ? KIND_ORDER.indexOf(kind) : KIND_ORDER.length);
  return found.sort((a, b) => rank(a.kind) - rank(b.kind) || a.kind.localeCompare(b.kind));
}

/** "3d", "5h", "12m", "40s", like kubectl's AGE. @param {string | undefined} iso */
function age(iso) {
  if (iso === undefined) return "-";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "-";
  const s = Math.max(0, Math.floor((Date.now() - t) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** @param {KubeObject} obj @param {string} kind @returns {string[]} */
function row(obj, kind) {
  const s = obj.status ?? {};
  const ready = conditionOf(s.conditions, "Ready");
  const synced = conditionOf(s.conditions, "Synced");
  // Why it is not Ready, else why it is not Synced (paused, an update refused), else Ready's reason.
  const reason = ready && ready.status !== "True" ? ready.reason : synced && synced.status !== "True" ? synced.reason : ready?.reason;
  const idFields = SERVICE_ID[/** @type {keyof typeof SERVICE_ID} */ (kind)] ?? [];
  const id = idFields.map((f) => text(s[f])).find((v) => v !== undefined);
  const lastSync =
    kind === "SecretSync" ? text(s.lastSyncedAt) : kind === "AccessToken" ? text(s.lastIssuedAt) : synced?.lastTransitionTime;
  return [kind, obj.metadata.namespace ?? "-", obj.metadata.name, ready?.status ?? "-", reason || "-", id ?? "-", age(lastSync)];
}

/** @param {string[][]} rows */
function table(rows) {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd((widths[i] ?? 0) + 3))).join("")).join("\n") + "\n";
}

/** @param {Args} args @returns {Promise<number>} */
async function status(args) {
  if (args.wait || args.timeoutMs !== undefined) throw new CliError("--wait and --timeout apply to sync and remove-secrets", EXIT.usage);
  if (args.positionals.length > 0) throw new CliError(`status takes no arguments (got ${args.positionals.join(" ")})`, EXIT.usage);
  if (args.allNamespaces && args.namespace !== undefined) throw new CliError("use either -n or -A", EXIT.usage);
  const resources = (await keywardResources(args)).filter((r) => r.namespaced || args.allNamespaces);
  const scope = args.allNamespaces ? ["--all-namespaces"] : nsFlags(args);
  const results = await Promise.all(
    resources.map(async (res) => {
      const r = await kubectl(args, ["get", res.resource, "--output", "json", ...(res.namespaced ? scope : [])]);
      if (r.code !== 0) return { res, error: kubectlMessage(r.stderr), items: [] };
      const list = /** @type {{ items?: KubeObject[] }} */ (JSON.parse(r.stdout));
      return { res, error: undefined, items: list.items ?? [] };
    }),
  );
  const rows = [["KIND", "NAMESPACE", "NAME", "READY", "REASON", "SERVICE-ID", "LAST-SYNC"]];
  let failed = 0;
  for (const { res, error, items } of results) {
    if (error !== undefined) {
      failed++;
      progress(`error: could not list ${res.resource}: ${error}`);
      continue;
    }
    const sorted = [...items].sort(
      (a, b) => (a.metadata.namespace ?? "").localeCompare(b.metadata.namespace ?? "") || a.metadata.name.localeCompare(b.metadata.name),
    );
    for (const obj of sorted) rows.push(row(obj, res.kind));
  }
  if (rows.length === 1) {
    const where = args.allNamespaces
      ? "any namespace"
      : args.namespace !== undefined
        ? `namespace "${args.namespace}"`
        : "the current namespace";
    progress(`No keyward resources found in ${where}.`);
  } else {
    process.stdout.write(table(rows));
  }
  return failed > 0 ? EXIT.failed : EXIT.ok;
}

// ---------------------------------------------------------------- main

/** @param {string[]} argv @returns {Promise<number>} */
async function main(argv) {
  const args = parseCommandLine(argv);
  const [command, ...rest] = args.positionals;
  if (args.help || command === "help") {
    process.stdout.write(USAGE);
    return EXIT.ok;
  }
  const sub = { ...args, positionals: rest };
  switch (command) {
    case "sync":
    case "remove-secrets":
      await requestAction(sub, command);
      return EXIT.ok;
    case "status":
      return status(sub);
    case undefined:
      throw new CliError("a command is needed: sync, remove-secrets or status", EXIT.usage);
    default:
      throw new CliError(`unknown command ${JSON.stringify(command)}: use sync, remove-secrets or status`, EXIT.usage);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    if (err instanceof CliError) {
      process.stderr.write(`error: ${err.message}\n`);
      if (err.code === EXIT.usage) process.stderr.write("See 'kubectl keyward --help'.\n");
      process.exitCode = err.code;
    } else {
      process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = EXIT.failed;
    }
  },
);
