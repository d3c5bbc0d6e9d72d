// What `kubectl keyward check` asks the cluster keyward's ServiceAccount may do (neededAccess, from
// the pod's settings) against what the chart grants that ServiceAccount, on the chart's own
// renderings: every question is answered yes by the chart's roles (a good install passes), and
// every grant of the chart's workload roles is asked about (a deleted role shows). The questions
// put to a real apiserver: test/integration/kubectl-check.test.ts.
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { deploymentEnv, flattenRules, parseYamlDocuments, renderChart, type Doc, type PolicyRule } from "../chart/helm.ts";

interface Access {
  namespace: string;
  group: string;
  resource: string;
  subresource?: string;
  name?: string;
  verb: string;
}
const plugin = createRequire(import.meta.url)("../../../bin/kubectl-keyward.cjs") as {
  neededAccess(env: Record<string, string>, podNamespace: string): Access[];
};

const releaseNs = "keyward-system";
const serviceAccount = "kw-keyward";
/** Bound to the ServiceAccount for the uninstall hook's Job, not for keyward: check does not ask about it. */
const hookRoles = new Set(["kw-keyward-uninstall"]);

/** "namespace|group/resource[#name]: verb" ("*" namespace: every one), as flattenRules writes them. */
const key = (namespace: string, grant: string): string => `${namespace}|${grant}`;

/** What the rendered chart grants the ServiceAccount, through its bindings. */
function granted(docs: Doc[]): string[] {
  const roles = new Map(
    docs
      .filter((d) => d.kind === "Role" || d.kind === "ClusterRole")
      .map((d) => [`${d.kind}/${d.metadata.namespace ?? ""}/${d.metadata.name}`, d]),
  );
  return docs.flatMap((d) => {
    if (d.kind !== "RoleBinding" && d.kind !== "ClusterRoleBinding") return [];
    const b = d as unknown as Doc & {
      roleRef: { kind: string; name: string };
      subjects?: { kind: string; name: string; namespace?: string }[];
    };
    if (!(b.subjects ?? []).some((s) => s.kind === "ServiceAccount" && s.name === serviceAccount && s.namespace === releaseNs)) return [];
    if (hookRoles.has(b.roleRef.name)) return [];
    const role = roles.get(`${b.roleRef.kind}/${b.roleRef.kind === "Role" ? (d.metadata.namespace ?? "") : ""}/${b.roleRef.name}`);
    if (role === undefined)
      throw new Error(`${d.kind} ${d.metadata.name} binds ${b.roleRef.kind} ${b.roleRef.name}, which the chart does not render`);
    const where = d.kind === "ClusterRoleBinding" ? "*" : (d.metadata.namespace ?? "");
    return flattenRules((role as unknown as { rules: PolicyRule[] }).rules).map((g) => key(where, g));
  });
}

function asked(docs: Doc[]): string[] {
  return plugin.neededAccess(deploymentEnv(docs), releaseNs).map((a) => {
    const resource = `${a.group || "core"}/${a.resource}${a.subresource ? `/${a.subresource}` : ""}${a.name ? `#${a.name}` : ""}`;
    return key(a.namespace || "*", `${resource}: ${a.verb}`);
  });
}

/** A grant answers a question when it is for the same thing in the same place, or everywhere, or for every name. */
function answers(grant: string, question: string): boolean {
  const [gWhere = "", gWhat = ""] = grant.split("|");
  const [qWhere = "", qWhat = ""] = question.split("|");
  const unnamed = (s: string): string => s.replace(/#[^:]*:/, ":");
  return (gWhere === "*" || gWhere === qWhere) && (gWhat === qWhat || gWhat === unnamed(qWhat));
}

const renderings: Record<string, Record<string, unknown>> = {
  "the defaults (cluster-wide, leader election, metrics auth kubernetes)": {},
  "watched namespaces, AccessTokens in one of them": { watchNamespaces: ["team-a", "team-b"], accessTokens: { namespaces: ["team-a"] } },
  "ClusterProviderConfigs and sharding": {
    replicas: 2,
    sharding: { enabled: true },
    clusterProviderConfig: { enabled: true, create: false, credentialsNamespace: "keyward-credentials" },
  },
  "one replica without leader election": { leaderElection: { enabled: false } },
};

describe("check's RBAC questions against the chart's roles", () => {
  for (const [what, values] of Object.entries(renderings)) {
    it(what, async () => {
      const docs = parseYamlDocuments(await renderChart({ release: "kw", namespace: releaseNs, setJson: values }));
      const grants = granted(docs);
      const questions = asked(docs);
      expect(questions.length).toBeGreaterThan(40);
      // Every question the chart answers yes: a good install passes.
      expect(questions.filter((q) => !grants.some((g) => answers(g, q)))).toEqual([]);
      // Every grant asked about: a role deleted or edited fails the check.
      expect(grants.filter((g) => !questions.some((q) => answers(g, q)))).toEqual([]);
    });
  }
});
