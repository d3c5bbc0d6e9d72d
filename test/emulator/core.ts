// What every handler works with: the state, the settings, persistence and the job runner.
import type { JobRunner } from "./jobs.ts";
import type { State } from "./state.ts";

export interface Core {
  state: State;
  readonly orgId: string;
  readonly jobDelayMs: number;
  readonly staticTokens: ReadonlySet<string>;
  readonly jobs: JobRunner;
  /** Persists the state (when a persist path is set). */
  changed(): void;
}
