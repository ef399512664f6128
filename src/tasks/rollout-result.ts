import { z } from "zod";
import { subscoreSchema, type VerifierResult } from "./verifier-result.js";

/**
 * How a rollout ended. `infra_error` is ours (sandbox, proxy, verifier machinery) and is excluded from advantage
 * estimation; everything else is attributed to the policy acting through the harness.
 */
export type RolloutStatus = "ok" | "task_failed" | "timeout" | "oom" | "harness_crash" | "infra_error";

export const ROLLOUT_STATUSES = ["ok", "task_failed", "timeout", "oom", "harness_crash", "infra_error"] as const satisfies readonly RolloutStatus[];

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

const time = z.number().finite().min(0);

/**
 * A result line that crossed a trust boundary (a rollout node's answer through the cluster queue): every field of
 * {@link RolloutResult} and nothing else, the score in [0, 1] and equal to the verifier's (0 without one; the runner
 * sets it only from the verifier, so a score that disagrees was not computed by it).
 */
export const rolloutResultSchema: z.ZodType<RolloutResult> = z
  .strictObject({
    rolloutId: z.string().min(1),
    taskId: z.string().min(1),
    harness: z.string().min(1),
    sample: z.number().int().min(0),
    family: z.string(),
    split: z.string(),
    status: z.enum(ROLLOUT_STATUSES),
    score: z.number().finite().min(0).max(1),
    verifier: z.strictObject({ score: z.number().finite().min(0).max(1), subscores: z.record(z.string(), subscoreSchema), error: z.string().optional() }).nullable(),
    harnessDetail: z.string(),
    exitCode: z.number().int().nullable(),
    signal: z.string().nullable(),
    stdout: z.string(),
    stderr: z.string(),
    error: z.string().nullable(),
    sessionIds: z.array(z.string()),
    calls: z.number().int().min(0),
    timings: z.strictObject({ startedAt: time, sandboxReadyAt: time.nullable(), harnessEndedAt: time.nullable(), settledAt: time.nullable(), verifiedAt: time.nullable(), endedAt: time }),
  })
  .refine((r) => r.score === (r.verifier?.score ?? 0), { message: "score differs from the verifier's score", path: ["score"] });

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
