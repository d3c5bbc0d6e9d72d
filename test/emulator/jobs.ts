// Sync, import and remove jobs. A job is pending for the first half of jobDelayMs, running for
// the second half, and settles (succeeded, or failed when an outcome was set) at jobDelayMs.
// Jobs live in the state with their queue time, so a restart resumes them where they were.
import { randomUUID } from "node:crypto";
import type { JobRec, JobStatus, State, SyncRec } from "./state.ts";
import type { JobAction } from "./types.ts";

interface StatusFields {
  status: "syncStatus" | "importStatus" | "removeStatus";
  jobId: "lastSyncJobId" | "lastImportJobId" | "lastRemoveJobId";
  message: "lastSyncMessage" | "lastImportMessage" | "lastRemoveMessage";
  at: "lastSyncedAt" | "lastImportedAt" | "lastRemovedAt";
}

const fields: Record<JobAction, StatusFields> = {
  sync: { status: "syncStatus", jobId: "lastSyncJobId", message: "lastSyncMessage", at: "lastSyncedAt" },
  import: { status: "importStatus", jobId: "lastImportJobId", message: "lastImportMessage", at: "lastImportedAt" },
  remove: { status: "removeStatus", jobId: "lastRemoveJobId", message: "lastRemoveMessage", at: "lastRemovedAt" },
};

export interface JobRunner {
  queue(sync: SyncRec, action: JobAction, options?: { deleteSyncOnSuccess?: boolean }): JobRec;
  hasActiveJob(syncId: string): boolean;
  /** Re-arms the timer after the state was replaced (start, reset). */
  resume(): void;
  stop(): void;
}

export function createJobRunner(getState: () => State, delayMs: number, changed: () => void): JobRunner {
  let timer: NodeJS.Timeout | undefined;

  const arm = (): void => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const dues = Object.values(getState().jobs).map((job) => nextDue(job, delayMs));
    if (dues.length === 0) return;
    timer = setTimeout(tick, Math.max(0, Math.min(...dues) - Date.now()));
  };

  const tick = (): void => {
    if (advanceJobs(getState(), delayMs, Date.now())) changed();
    arm();
  };

  return {
    queue(sync, action, options = {}) {
      const job: JobRec = { id: randomUUID(), syncId: sync.id, action, queuedAt: Date.now(), state: "pending" };
      if (options.deleteSyncOnSuccess) job.deleteSyncOnSuccess = true;
      getState().jobs[job.id] = job;
      const f = fields[action];
      sync[f.status] = "pending";
      sync[f.jobId] = job.id;
      arm();
      return job;
    },
    hasActiveJob: (syncId) => Object.values(getState().jobs).some((job) => job.syncId === syncId),
    resume: arm,
    stop() {
      if (timer) clearTimeout(timer);
      timer = undefined;
    },
  };
}

function nextDue(job: JobRec, delayMs: number): number {
  return job.state === "pending" ? job.queuedAt + delayMs / 2 : job.queuedAt + delayMs;
}

/** Moves every job whose time has come; true when anything changed. */
function advanceJobs(state: State, delayMs: number, now: number): boolean {
  let changed = false;
  for (const job of Object.values(state.jobs)) {
    const sync = state.syncs[job.syncId];
    if (!sync) {
      Reflect.deleteProperty(state.jobs, job.id);
      changed = true;
      continue;
    }
    if (now >= job.queuedAt + delayMs) {
      settle(state, job, sync);
      changed = true;
    } else if (job.state === "pending" && now >= job.queuedAt + delayMs / 2) {
      job.state = "running";
      sync[fields[job.action].status] = "running";
      changed = true;
    }
  }
  return changed;
}

function settle(state: State, job: JobRec, sync: SyncRec): void {
  Reflect.deleteProperty(state.jobs, job.id);
  const { outcome, message } = takeOutcome(state, sync.id, job.action);
  const f = fields[job.action];
  const status: JobStatus = outcome;
  sync[f.status] = status;
  sync[f.at] = new Date().toISOString();
  if (outcome === "failed") sync[f.message] = message ?? `The ${job.action} job failed`;
  else Reflect.deleteProperty(sync, f.message);
  if (outcome === "succeeded" && job.deleteSyncOnSuccess) Reflect.deleteProperty(state.syncs, sync.id);
}

function takeOutcome(state: State, syncId: string, action: JobAction): { outcome: "succeeded" | "failed"; message?: string } {
  const index = state.jobOutcomes.findIndex((o) => o.syncId === syncId && o.action === action && o.remaining > 0);
  const planned = state.jobOutcomes[index];
  if (!planned) return { outcome: "succeeded" };
  planned.remaining -= 1;
  if (planned.remaining <= 0) state.jobOutcomes.splice(index, 1);
  return planned.message === undefined ? { outcome: planned.outcome } : { outcome: planned.outcome, message: planned.message };
}
