// The soak's judge (bench/soak/judge.ts) on evidence written by hand: a run where everything held
// passes, and each kind of breach is reported under its own invariant. Also the slope of health.ts.
import { describe, expect, it } from "vitest";
import { judge, type Call, type Evidence, type Lineage, type Verdict } from "../../../bench/soak/judge.ts";
import { laterSlopes, metricSum, slope, type Sample } from "../../../bench/soak/health.ts";

const lineage = (l: Partial<Lineage> & Pick<Lineage, "kind" | "name">): Lineage => ({
  namespace: "a",
  syncValues: [],
  removeValues: [],
  ...l,
});
const ready = (spec: Record<string, unknown>) => ({
  generation: 2,
  spec,
  conditions: [{ type: "Ready", status: "True", observedGeneration: 2 }],
});
const call = (c: Partial<Call> & Pick<Call, "operation" | "path">): Call => ({
  at: 1_000,
  method: "POST",
  status: 200,
  principal: "pa",
  ...c,
});

/** Namespace a made project P1 (slug k-p1) and its sync k-s1 (id S1); namespace b owns nothing. */
function evidence(over: Partial<Evidence> = {}): Evidence {
  return {
    calls: [
      call({ operation: "createProject", path: "/api/v2/workspace", slug: "k-p1" }),
      call({ operation: "createSecretSync", path: "/api/v1/secret-syncs/monitoring", name: "k-s1", projectId: "P1" }),
      call({ operation: "triggerSecretSync", path: "/api/v1/secret-syncs/monitoring/S1/sync-secrets" }),
    ],
    lineages: [
      lineage({ kind: "Project", name: "p1", slug: "k-p1", final: ready({ description: "d" }) }),
      lineage({ kind: "SecretSync", name: "k-s1", projectName: "p1", syncValues: ["v1"], final: ready({ description: "d" }) }),
    ],
    projectIdsBySlug: new Map([["k-p1", new Set(["P1"])]]),
    syncIdsByName: new Map([["k-s1", new Set(["S1"])]]),
    principalsOf: new Map([
      ["a", new Set(["pa"])],
      ["b", new Set(["pb"])],
    ]),
    final: {
      projects: { P1: { id: "P1", slug: "k-p1", description: "d" } },
      syncs: { S1: { id: "S1", name: "k-s1", projectId: "P1", description: "d" } },
      memberships: {},
      users: {},
    },
    prefix: "k-",
    ...over,
  };
}

const broken = (e: Evidence): Record<string, string[]> =>
  Object.fromEntries(
    judge(e)
      .filter((v) => v.violations.length > 0)
      .map((v) => [v.name, v.violations]),
  );

describe("the soak's judge", () => {
  it("passes a run where every invariant held, and counts what it checked", () => {
    const verdicts = judge(evidence());
    expect(verdicts.map((v) => [v.name, v.violations])).toEqual(verdicts.map((v) => [v.name, []]));
    // Nothing was deleted here, so only that invariant had nothing to check.
    expect(verdicts.filter((v) => v.checked === 0).map((v) => v.name)).toEqual(["no action after its resource was deleted"]);
  });

  it("reports a second create that landed for one resource, and a second id for its key", () => {
    const e = evidence();
    const verdicts = broken({
      ...e,
      calls: [...e.calls, call({ operation: "createProject", path: "/api/v2/workspace", slug: "k-p1", fault: "client-gone" })],
      projectIdsBySlug: new Map([["k-p1", new Set(["P1", "P2"])]]),
    });
    expect(verdicts["at most one external object created per resource"]).toEqual([
      "Project a/p1: 2 creates landed",
      "Project a/p1: 2 external ids seen for k-p1",
    ]);
  });

  it("reports an action value run twice, and one never run", () => {
    const e = evidence();
    const twice = [...e.calls, call({ operation: "triggerSecretSync", path: "/api/v1/secret-syncs/monitoring/S1/sync-secrets" })];
    expect(broken({ ...e, calls: twice })["each action value ran exactly once"]).toEqual([
      "SecretSync a/k-s1: 1 sync values set, 2 syncs ran",
    ]);
    const never = e.calls.filter((c) => c.operation !== "triggerSecretSync");
    expect(broken({ ...e, calls: never })["each action value ran exactly once"]).toEqual([
      "SecretSync a/k-s1: 1 sync values set, 0 syncs ran",
    ]);
    // Fewer syncs than values after an update that queued a sync job: keyward's documented limit, noted apart.
    const updated = [...never, call({ operation: "updateSecretSync", method: "PATCH", path: "/api/v1/secret-syncs/monitoring/S1" })];
    expect(broken({ ...e, calls: updated })).toEqual({});
    expect(judge({ ...e, calls: updated }).find((v) => v.name === "each action value ran exactly once")?.notes).toEqual([
      "SecretSync a/k-s1: 1 sync values set, 0 syncs ran, after an update that queued a sync job",
    ]);
    // A refused trigger (400: a job still running) ran nothing.
    const refused = [
      ...e.calls,
      call({ operation: "triggerSecretSync", path: "/api/v1/secret-syncs/monitoring/S1/sync-secrets", status: 400 }),
    ];
    expect(broken({ ...e, calls: refused })).toEqual({});
  });

  it("reports a write on a sync after its resource was gone, but not a late commit of a request sent before", () => {
    const e = evidence();
    const gone = e.lineages.map((l) =>
      l.kind === "SecretSync" ? { ...l, deletionPolicy: "Delete", deleteRequestedAt: 2_000, goneAt: 3_000, final: undefined } : l,
    );
    const deleteCall = call({ operation: "deleteSecretSync", method: "DELETE", path: "/api/v1/secret-syncs/monitoring/S1", at: 2_500 });
    const final = { ...e.final, syncs: {} };
    expect(broken({ ...e, lineages: gone, final, calls: [...e.calls, deleteCall] })).toEqual({});
    const late = call({ operation: "updateSecretSync", method: "PATCH", path: "/api/v1/secret-syncs/monitoring/S1", at: 3_500 });
    expect(
      broken({ ...e, lineages: gone, final, calls: [...e.calls, deleteCall, late] })["no action after its resource was deleted"],
    ).toEqual(["SecretSync a/k-s1 (Delete): updateSecretSync /api/v1/secret-syncs/monitoring/S1 500 ms after it was gone"]);
    expect(broken({ ...e, lineages: gone, final, calls: [...e.calls, deleteCall, { ...late, fault: "client-gone" }] })).toEqual({});
  });

  it("counts apart a Retain Project's update after it was gone (no finalizer), and reports a Delete Project's", () => {
    const e = evidence();
    const goneWith = (deletionPolicy: string): Lineage[] =>
      e.lineages.map((l) =>
        l.kind === "Project" ? { ...l, deletionPolicy, deleteRequestedAt: 2_000, goneAt: 3_000, final: undefined } : l,
      );
    const late = call({ operation: "updateProject", method: "PATCH", path: "/api/v1/projects/P1", at: 3_400 });
    const name = "no action after its resource was deleted";
    const retained = judge({ ...e, lineages: goneWith("Retain"), calls: [...e.calls, late] }).find((v) => v.name === name);
    expect(retained?.violations).toEqual([]);
    expect(retained?.notes).toEqual(["Project a/p1 (Retain): updateProject /api/v1/projects/P1 400 ms after it was gone (no finalizer)"]);
    const deleted = judge({ ...e, lineages: goneWith("Delete"), calls: [...e.calls, late] }).find((v) => v.name === name);
    expect(deleted?.violations).toEqual(["Project a/p1 (Delete): updateProject /api/v1/projects/P1 400 ms after it was gone"]);
  });

  it("reports what a deletion left at the service, what is missing, and an object no resource declares", () => {
    const e = evidence();
    const deleted = e.lineages.map((l) =>
      l.kind === "SecretSync" ? { ...l, deletionPolicy: "Delete", deleteRequestedAt: 2_000, goneAt: 3_000, final: undefined } : l,
    );
    expect(broken({ ...e, lineages: deleted })["the service holds exactly what the live resources declare"]).toEqual([
      "SecretSync a/k-s1 (Delete): sync left",
    ]);
    const missing = { ...e.final, syncs: {} };
    expect(broken({ ...e, final: missing })["the service holds exactly what the live resources declare"]).toEqual([
      "SecretSync a/k-s1: 0 syncs named k-s1",
    ]);
    const stray = { ...e.final, projects: { ...e.final.projects, P9: { id: "P9", slug: "k-stray", description: null } } };
    expect(broken({ ...e, final: stray })["the service holds exactly what the live resources declare"]).toEqual([
      "project k-stray at the service, no resource declares it",
    ]);
  });

  it("reports a Revoke membership's roles left at the service, unless it was gone before its project was created there", () => {
    const e = evidence();
    // The project's create landed at 1_000; the runner seeded alice into it as the service created it.
    const membership = (goneAt: number): Lineage =>
      lineage({
        kind: "ProjectMembership",
        name: "m-p1",
        projectName: "p1",
        deletionPolicy: "Revoke",
        deleteRequestedAt: goneAt - 100,
        goneAt,
      });
    const final = {
      ...e.final,
      users: { U1: { id: "U1", username: "alice@example.com" } },
      memberships: { M1: { id: "M1", projectId: "P1", userId: "U1", roles: [{ role: "member" }] } },
    };
    // keyward wrote its member's roles (so it held the finalizer) and left the role: a violation.
    const reached = [
      ...e.calls,
      call({ operation: "updateMembership", method: "PATCH", path: "/api/v1/projects/P1/memberships/M1", at: 1_500 }),
    ];
    const after = broken({ ...e, calls: reached, final, lineages: [...e.lineages, membership(2_000)] });
    expect(after["the service holds exactly what the live resources declare"]).toEqual(["ProjectMembership a/m-p1 (Revoke): roles member"]);
    // Gone before its project's create landed, there was no member to revoke, whatever it held.
    expect(broken({ ...e, final, lineages: [...e.lineages, { ...membership(900), heldFinalizer: true }] })).toEqual({});
  });

  it("counts apart a Revoke membership released without a call: keyward never took it on", () => {
    const e = evidence();
    const final = {
      ...e.final,
      users: { U1: { id: "U1", username: "alice@example.com" } },
      memberships: { M1: { id: "M1", projectId: "P1", userId: "U1", roles: [{ role: "member" }] } },
    };
    const gone = lineage({
      kind: "ProjectMembership",
      name: "m-p1",
      projectName: "p1",
      deletionPolicy: "Revoke",
      deleteRequestedAt: 1_900,
      goneAt: 2_000,
    });
    const verdicts = judge({ ...e, final, lineages: [...e.lineages, gone] });
    const matches = verdicts.find((v) => v.name === "the service holds exactly what the live resources declare");
    expect(matches?.violations).toEqual([]);
    expect(matches?.notes).toEqual([
      "ProjectMembership a/m-p1 (Revoke): roles member left; keyward never took it on (no finalizer seen, no write of its member)",
    ]);
  });

  describe("a Revoke membership deleted as its first pass with the project's id ran (seed 7, 2026-11-29 22:09, kind)", () => {
    // Every call of that run on project k7-04-p41 (id P), as recorded: its create, then one lookup
    // of its members, by ProjectMembership soak-04/m-p41's first pass with the project's id. The
    // churn's fourth step (seed 7 replays it) had deleted m-p41 33.1 to 34.3 s into the run, before
    // that pass added keyward's finalizer: the pass found the resource gone and wrote nothing. Its
    // Project went with Retain at 89 s, so the member the runner seeded kept role member. The
    // report keeps no lineage times: these are the ones the schedule and the runner's lists give.
    const P = "e4bdf18c-31a9-4be0-816e-e9ffe256e123";
    const begin = 1_795_990_174_593;
    const recorded: Call[] = [
      {
        at: 1_795_990_207_793,
        method: "GET",
        operation: "getProjectBySlug",
        path: "/api/v1/projects/slug/k7-04-p41",
        status: 404,
        principal: "462e514b3ee2",
      },
      {
        at: 1_795_990_208_215,
        method: "POST",
        operation: "createProject",
        path: "/api/v2/workspace",
        status: 200,
        principal: "462e514b3ee2",
        slug: "k7-04-p41",
      },
      {
        at: 1_795_990_209_219,
        method: "POST",
        operation: "getMembershipDetails",
        path: `/api/v1/projects/${P}/memberships/details`,
        status: 200,
        principal: "462e514b3ee2",
      },
    ];
    const recordedCase = (over: { calls?: Call[]; heldFinalizer?: boolean } = {}): Evidence => ({
      calls: over.calls ?? recorded,
      lineages: [
        lineage({
          kind: "Project",
          namespace: "soak-04",
          name: "p41",
          slug: "k7-04-p41",
          deletionPolicy: "Retain",
          deleteRequestedAt: begin + 89_000,
          goneAt: begin + 90_000,
        }),
        lineage({
          kind: "ProjectMembership",
          namespace: "soak-04",
          name: "m-p41",
          projectName: "p41",
          deletionPolicy: "Revoke",
          deleteRequestedAt: begin + 33_700,
          goneAt: begin + 35_500,
          ...(over.heldFinalizer === undefined ? {} : { heldFinalizer: over.heldFinalizer }),
        }),
      ],
      projectIdsBySlug: new Map([["k7-04-p41", new Set([P])]]),
      syncIdsByName: new Map(),
      principalsOf: new Map([["soak-04", new Set(["462e514b3ee2"])]]),
      final: {
        projects: { [P]: { id: P, slug: "k7-04-p41", description: "d41" } },
        syncs: {},
        // The member's id is not in the call log (keyward never wrote it): M41 stands for it.
        memberships: { M41: { id: "M41", projectId: P, userId: "U1", roles: [{ role: "member" }] } },
        users: { U1: { id: "U1", username: "alice@example.com" } },
      },
      prefix: "k7-",
    });
    const matches = (e: Evidence): Verdict | undefined =>
      judge(e).find((v) => v.name === "the service holds exactly what the live resources declare");
    const patch = (member: string, at: number): Call => ({
      at,
      method: "PATCH",
      operation: "updateMembership",
      path: `/api/v1/projects/${P}/memberships/${member}`,
      status: 200,
      principal: "462e514b3ee2",
    });

    it("counts it apart: a lookup of the project's members is no sign that keyward took it on", () => {
      expect(broken(recordedCase())).toEqual({});
      expect(matches(recordedCase())?.notes).toEqual([
        "ProjectMembership soak-04/m-p41 (Revoke): roles member left; keyward never took it on (no finalizer seen, no write of its member)",
      ]);
    });

    it("does not take a write of another member of the project for one of its own", () => {
      const other = recordedCase({ calls: [...recorded, patch("M-OTHER", 1_795_990_209_500)] });
      expect(matches(other)?.violations).toEqual([]);
    });

    it("reports it once keyward had taken it on: its finalizer seen, or a write of its member", () => {
      const violation = ["ProjectMembership soak-04/m-p41 (Revoke): roles member"];
      expect(matches(recordedCase({ heldFinalizer: true }))?.violations).toEqual(violation);
      expect(matches(recordedCase({ calls: [...recorded, patch("M41", 1_795_990_209_500)] }))?.violations).toEqual(violation);
    });
  });

  it("reports a live resource not Ready at its generation", () => {
    const e = evidence();
    const stale = e.lineages.map((l) => (l.kind === "Project" ? { ...l, final: { ...ready({ description: "d" }), generation: 3 } } : l));
    expect(broken({ ...e, lineages: stale })["every live resource Ready, every deleted one gone"]).toEqual([
      "Project a/p1: Ready=True  at generation 2/3",
    ]);
  });

  it("reports a write on one namespace's object with another namespace's credential", () => {
    const e = evidence();
    const foreign = call({ operation: "updateProject", method: "PATCH", path: "/api/v1/projects/P1", principal: "pb" });
    expect(broken({ ...e, calls: [...e.calls, foreign] })["no resource acted on another namespace's external object"]).toEqual([
      "updateProject /api/v1/projects/P1 by b on an object of a",
    ]);
    const foreignSync = call({
      operation: "createSecretSync",
      path: "/api/v1/secret-syncs/monitoring",
      name: "k-s9",
      projectId: "P1",
      principal: "pb",
      status: 400,
    });
    expect(broken({ ...e, calls: [...e.calls, foreignSync] })["no resource acted on another namespace's external object"]).toEqual([
      "createSecretSync /api/v1/secret-syncs/monitoring by b on an object of a",
    ]);
    // a's rotated token is a's; a credential a shares with c (a ClusterProviderConfig) is both's, b's is not.
    const shared = new Map([
      ["a", new Set(["pa", "pa2", "cpc"])],
      ["b", new Set(["pb"])],
      ["c", new Set(["cpc"])],
    ]);
    const rotated = { ...foreign, principal: "pa2" };
    const byShared = { ...foreign, principal: "cpc" };
    expect(broken({ ...e, principalsOf: shared, calls: [...e.calls, rotated, byShared] })).toEqual({});
    expect(
      broken({ ...e, principalsOf: shared, calls: [...e.calls, foreign] })["no resource acted on another namespace's external object"],
    ).toEqual(["updateProject /api/v1/projects/P1 by b on an object of a"]);
  });

  it("compares a membership's temporary role by its range and start, and keeps an ended one", () => {
    const start = "2030-01-01T00:00:00Z";
    const roles = [
      { role: "member" },
      { role: "viewer", isTemporary: true, temporaryMode: "relative", temporaryRange: "90s", temporaryAccessStartTime: start },
    ];
    const e = evidence();
    const withMember: Evidence = {
      ...e,
      lineages: [...e.lineages, lineage({ kind: "ProjectMembership", name: "m-p1", projectName: "p1", final: ready({ roles }) })],
      final: {
        ...e.final,
        users: { U: { id: "U", username: "alice" } },
        memberships: {
          M: {
            id: "M",
            projectId: "P1",
            userId: "U",
            roles: [
              { role: "member", isTemporary: false },
              // Ended already (the service still lists it): what the spec declares.
              {
                role: "viewer",
                isTemporary: true,
                temporaryRange: "90s",
                temporaryAccessStartTime: "2030-01-01T00:00:00.000Z",
                temporaryAccessEndTime: "2030-01-01T00:01:30.000Z",
              },
            ],
          },
        },
      },
    };
    expect(broken(withMember)).toEqual({});
    const other = structuredClone(withMember.final);
    const role = other.memberships["M"]?.roles[1];
    if (role) role.temporaryRange = "1h";
    expect(broken({ ...withMember, final: other })["the service holds exactly what the live resources declare"]).toEqual([
      "ProjectMembership a/m-p1: roles member,viewer temporary 1h from 2030-01-01T00:00:00.000Z, declared member,viewer temporary 90s from 2030-01-01T00:00:00.000Z",
    ]);
  });
});

describe("the soak's health figures", () => {
  it("fits a slope, and takes the later slope on the process that lived longest there", () => {
    expect(
      slope([
        { x: 0, y: 1 },
        { x: 10, y: 21 },
        { x: 20, y: 41 },
      ]),
    ).toBe(2);
    expect(slope([{ x: 5, y: 1 }])).toBeUndefined();
    const s = (t: number, pid: number, rssMb: number): Sample => ({
      t,
      pid,
      rssMb,
      replica: "r",
      queueDepth: 0,
      series: 1,
      serviceRps: 0,
      apiserverRps: 0,
    });
    // pid 1 grows 1 MB per 10 s (360 MB/h) until a kill; pid 2 after it is flat.
    const samples = [s(0, 1, 100), s(10, 1, 101), s(20, 1, 102), s(30, 2, 80), s(40, 2, 80), s(50, 2, 80), s(60, 2, 80)];
    expect(laterSlopes(samples, 0)).toEqual({ pid: 2, points: 4, rssMbPerHour: 0, heapMbPerHour: undefined });
    expect(laterSlopes(samples.slice(0, 3), 0).rssMbPerHour).toBe(360);
  });

  it("sums a metric over its labels, and tells a metric from another it prefixes", () => {
    const text = '# HELP workqueue_depth x\nworkqueue_depth{name="a"} 2\nworkqueue_depth{name="b"} 3\nworkqueue_depth_max 9\n';
    expect(metricSum(text, "workqueue_depth")).toBe(5);
    expect(metricSum(text, "absent")).toBeUndefined();
  });
});
