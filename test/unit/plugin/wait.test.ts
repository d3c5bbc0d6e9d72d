// kubectl keyward sync/remove-secrets --wait: which job a request started, judged from one look at
// the SecretSync's status. The command itself, against a real apiserver, keyward and the emulator:
// test/integration/kubectl-plugin.test.ts.
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";

interface Action {
  job: string;
  status: string;
  jobId: string;
  at: string;
  message: string;
}
type JobLook = { wait: string; active?: string } | { done: string } | { failed: string };
const plugin = createRequire(import.meta.url)("../../../bin/kubectl-keyward.cjs") as {
  jobLook(s: Record<string, unknown>, action: Action, base: Record<string, unknown>, seenActive: string | undefined, ref: string): JobLook;
  ACTIONS: Record<"sync" | "remove-secrets", Action>;
};
const sync = plugin.ACTIONS.sync;
const ref = "team-a/web";
/** The status before the request: an earlier job that settled. */
const before = { syncStatus: "succeeded", lastSyncJobId: "job-1", lastSyncedAt: "2026-11-28T10:00:00Z" };

describe("jobLook: the job a handled request started", () => {
  it("a pending or running job is awaited, and its id remembered as the request's job", () => {
    expect(plugin.jobLook({ syncStatus: "pending", lastSyncJobId: "job-2" }, sync, before, undefined, ref)).toEqual({
      wait: "the sync job is pending",
      active: "job-2",
    });
    expect(plugin.jobLook({ syncStatus: "running", lastSyncJobId: "job-2" }, sync, before, "job-2", ref)).toEqual({
      wait: "the sync job is running",
      active: "job-2",
    });
  });

  it("the job that had settled before the request is not taken for the request's own", () => {
    expect(plugin.jobLook({ ...before }, sync, before, undefined, ref)).toEqual({ wait: "waiting for the sync job to start" });
  });

  it("a job that settled before the first look counts when it is another job, or the same id settled again", () => {
    const other = { syncStatus: "succeeded", lastSyncJobId: "job-2", lastSyncedAt: "2026-11-28T10:05:00Z" };
    expect(plugin.jobLook(other, sync, before, undefined, ref)).toEqual({
      done: "the sync job job-2 of SecretSync team-a/web succeeded at 2026-11-28T10:05:00Z",
    });
    const again = { ...before, lastSyncedAt: "2026-11-28T10:06:00Z" };
    expect(plugin.jobLook(again, sync, before, undefined, ref)).toEqual({
      done: "the sync job job-1 of SecretSync team-a/web succeeded at 2026-11-28T10:06:00Z",
    });
  });

  it("once the request's job was seen active, its settling ends the wait even if it looks like the old one", () => {
    expect(plugin.jobLook({ ...before }, sync, before, "job-1", ref)).toEqual({
      done: "the sync job job-1 of SecretSync team-a/web succeeded at 2026-11-28T10:00:00Z",
    });
  });

  it("a failed job carries the service's message, or says there was none", () => {
    const failed = { syncStatus: "failed", lastSyncJobId: "job-3", lastSyncMessage: "destination refused the write" };
    expect(plugin.jobLook(failed, sync, before, "job-3", ref)).toEqual({
      failed: "the sync job job-3 of SecretSync team-a/web failed: destination refused the write",
    });
    expect(plugin.jobLook({ syncStatus: "failed", lastSyncJobId: "job-3" }, sync, before, "job-3", ref)).toEqual({
      failed: "the sync job job-3 of SecretSync team-a/web failed: the service gave no message",
    });
  });

  it("no status yet, or one it does not know, is awaited and named", () => {
    expect(plugin.jobLook({}, sync, {}, undefined, ref)).toEqual({ wait: "the sync job's status is not reported yet" });
    expect(plugin.jobLook({ syncStatus: "queued" }, sync, {}, undefined, ref)).toEqual({ wait: "the sync job's status is queued" });
  });

  it("remove-secrets reads its own status fields", () => {
    const action = plugin.ACTIONS["remove-secrets"];
    const s = { removeStatus: "succeeded", lastRemoveJobId: "rm-1", lastRemovedAt: "2026-11-28T11:00:00Z", syncStatus: "failed" };
    expect(plugin.jobLook(s, action, {}, undefined, ref)).toEqual({
      done: "the remove-secrets job rm-1 of SecretSync team-a/web succeeded at 2026-11-28T11:00:00Z",
    });
  });
});
