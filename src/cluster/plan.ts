import { createHash } from "node:crypto";
import { basename } from "node:path";
import { expandPlan, type RolloutPlan } from "../rollout/runner.js";
import { pendingRolloutResult, type RolloutResult } from "../tasks/rollout-result.js";
import type { GatheredRollout } from "./dispatch.js";
import { ROLLOUT_JOB_VERSION, type RolloutJob } from "./job.js";

/** What every job of one dispatch shares. */
export interface JobCommon {
  runId: string;
  engine: string;
  store: string | null;
  policyVersion: number | null;
  sampling: RolloutJob["sampling"];
  settings: RolloutJob["settings"];
}

/** A run id that is stable for one run directory (a resumed run finds its jobs again) and unique across folders. */
export function runIdOf(runDir: string): string {
  const base = basename(runDir).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 60) || "run";
  return `${base}-${createHash("sha256").update(runDir).digest("hex").slice(0, 8)}`;
}

/** The plan's rollouts as jobs, in the plan's order (GRPO groups are regathered by rollout id, whichever node ran them). */
export function jobsOfPlan(plan: RolloutPlan, common: JobCommon): RolloutJob[] {
  const settings = plan.samplingSeeds === undefined ? common.settings : { ...common.settings, samplingSeeds: plan.samplingSeeds };
  return expandPlan(plan).map(({ request, task }) => ({ v: ROLLOUT_JOB_VERSION, ...common, settings, rolloutId: request.rolloutId, task, harness: request.harness, sample: request.sample }));
}

/**
 * A gathered end as the runner's result line: a completed job gives the node's result; a job in the failed set
 * becomes an `infra_error` result (kept out of advantages) that says it was dropped and why.
 */
export function resultOfGathered(job: RolloutJob, g: GatheredRollout): RolloutResult {
  // Validated against the job when gathered (job.ts parseJobReturn).
  if (g.outcome === "completed") return g.ret.result;
  const request = { rolloutId: job.rolloutId, taskId: job.task.id, harness: job.harness, sample: job.sample };
  return pendingRolloutResult(request, job.task, Date.now(), `cluster_job_failed: dropped after ${g.attempts} attempt(s), in the queue's failed set: ${g.reason}`);
}
