import type { VerifierResult } from "./verifier-result.js";

/**
 * How a rollout ended. `infra_error` is ours (sandbox, proxy, verifier machinery) and is excluded from advantage
 * estimation; everything else is attributed to the policy acting through the harness.
 */
export type RolloutStatus = "ok" | "task_failed" | "timeout" | "oom" | "harness_crash" | "infra_error";

export const ROLLOUT_STATUSES: readonly RolloutStatus[] = ["ok", "task_failed", "timeout", "oom", "harness_crash", "infra_error"];

export interface RolloutRequest {
  rolloutId: string;
  taskId: string;
  harness: string;
  /** Index of this sample among the k samples of the same (task, harness) pair. */
  sample: number;
}

export interface RolloutTimings {
  startedAt: number;
  sandboxReadyAt: number | null;
  harnessEndedAt: number | null;
  settledAt: number | null;
  verifiedAt: number | null;
  endedAt: number;
}

export interface RolloutResult extends RolloutRequest {
  family: string;
  split: string;
  status: RolloutStatus;
  /** Verifier score in [0, 1] (0 when the verifier could not run). */
  score: number;
  verifier: VerifierResult | null;
  /** Why the harness run counts as finished or not, in the harness definition's words. */
  harnessDetail: string;
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Set for infra errors and harness crashes: what went wrong. */
  error: string | null;
  sessionIds: string[];
  calls: number;
  timings: RolloutTimings;
}

/**
 * A rollout that has not got anywhere yet: `infra_error` with no output, started and ended at `at`. The runner fills
 * it in as the rollout proceeds; a rollout that never ran (dropped from a cluster queue, say) stays like this plus
 * its `error`.
 */
export function pendingRolloutResult(request: RolloutRequest, task: { family: string; split: string }, at: number, error: string | null = null): RolloutResult {
  return {
    ...request,
    family: task.family,
    split: task.split,
    status: "infra_error",
    score: 0,
    verifier: null,
    harnessDetail: "",
    exitCode: null,
    signal: null,
    stdout: "",
    stderr: "",
    error,
    sessionIds: [],
    calls: 0,
    timings: { startedAt: at, sandboxReadyAt: null, harnessEndedAt: null, settledAt: null, verifiedAt: null, endedAt: at },
  };
}
