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
