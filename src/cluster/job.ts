import { z } from "zod";
import { UserError } from "../core/errors.js";
import { MEMORY_MB_MAX, MEMORY_MB_MIN } from "../sandbox/options.js";
import { rolloutResultSchema } from "../tasks/rollout-result.js";
import { taskSchema, type Task } from "../tasks/task.js";

/**
 * A rollout job as it crosses the queue: everything a node needs to run one rollout attempt, and nothing it must
 * trust. Nodes parse every payload with {@link parseRolloutJob} (anyone with the queue's password can enqueue).
 *
 * Still version 1 with `settings.memoryMb` added: the field is optional, so a job without it is the same job as
 * before and any node runs it. A node older than the field refuses a job that carries it (the schema is strict:
 * `invalid_cluster_job`, "Unrecognized key: memoryMb"), so a memory limit is never silently dropped; upgrade nodes
 * before producers set it.
 */
export const ROLLOUT_JOB_VERSION = 1;

/** The BullMQ queue every rollout node pulls from. */
export const ROLLOUT_QUEUE = "harnessrl-rollouts";

const idSchema = z.string().min(1).max(200).regex(/^[A-Za-z0-9._:-]+$/, "must use only letters, digits, '.', '_', ':' and '-'");

export const rolloutJobSchema = z.strictObject({
  v: z.literal(ROLLOUT_JOB_VERSION),
  runId: idSchema,
  rolloutId: idSchema,
  /** The whole task (files, prompt, verifier): nodes need no task suite of their own. */
  task: taskSchema,
  harness: z.string().min(1).max(100).regex(/^[A-Za-z0-9._-]+$/),
  sample: z.number().int().min(0).max(1_000_000),
  /** The policy version the engine must serve for this rollout (null: whatever it serves, e.g. `rollout`/`eval`). */
  policyVersion: z.number().int().min(0).nullable(),
  /** The engine spec the node samples with, e.g. `vllm:http://10.0.0.1:8000`, `oracle`, `scripted:<module>`. */
  engine: z.string().min(1).max(2000),
  /** The central record store the node ships the finished rollout to, unless the node was given its own (--store). */
  store: z.string().min(1).max(2000).nullable(),
  // topK is optional so jobs from runners older than the field stay valid (absent: the whole distribution).
  sampling: z.strictObject({ temperature: z.number().min(0).max(10), maxTokens: z.number().int().min(1).max(1_000_000), topK: z.number().int().min(0).max(1_000_000).optional() }),
  settings: z.strictObject({
    maxTurns: z.number().int().min(1).max(10_000),
    maxTokens: z.number().int().min(1).max(1_000_000),
    harnessTimeoutMs: z.number().int().min(1).max(24 * 3600_000),
    /**
     * The sandbox's memory limit in MiB (`rollout.memory_mb`, `--memory-mb`); absent: the node's default (2 GiB, or
     * its cap when lower). A node refuses a job asking more than its `--max-memory-mb` (docs/cluster.md).
     */
    memoryMb: z.number().int().min(MEMORY_MB_MIN).max(MEMORY_MB_MAX).optional(),
    /**
     * A common-random-numbers key (an evaluation's, or a seeded training step's; RolloutSettings.samplingSeeds): the
     * node seeds the rollout's calls from it and the job's (task, harness, sample). Optional like `memoryMb`, and
     * refused the same way by older nodes.
     */
    samplingSeeds: z.string().min(1).max(200).optional(),
  }),
});
export type RolloutJob = z.infer<typeof rolloutJobSchema>;

/**
 * What a node answers for a job it completed: the result line, and whether its records landed or wait in a spool.
 * Untrusted like the job (a node, or anyone with the queue's password, writes it): the control plane reads it only
 * through {@link parseJobReturn}.
 */
export const rolloutJobReturnSchema = z.strictObject({
  result: rolloutResultSchema,
  /** `landed`: in the central store now; `duplicate`: an earlier attempt had landed; `spooled`: kept on the node. */
  delivery: z.enum(["landed", "duplicate", "spooled"]),
  attempt: z.number().int().min(1),
  nodeId: z.string(),
  /**
   * Where the node's time went (for the cluster benchmark): the rollout itself, shipping the bundle, the whole job,
   * and of that the one-off setup a node pays on its first job per engine (stack open, harness install check).
   */
  timing: z.strictObject({ rolloutMs: z.number(), shipMs: z.number(), jobMs: z.number(), setupMs: z.number() }).optional(),
});
export type RolloutJobReturn = z.infer<typeof rolloutJobReturnSchema>;

/** Validates an untrusted job payload. */
export function parseRolloutJob(data: unknown): RolloutJob {
  const r = rolloutJobSchema.safeParse(data);
  if (!r.success) {
    const first = r.error.issues[0];
    throw new UserError("invalid_cluster_job", `rollout job does not validate: ${first ? `${first.path.join(".") || "(root)"}: ${first.message}` : "unknown"} (${r.error.issues.length} issue(s))`);
  }
  return r.data;
}

/**
 * Validates a node's answer to `job`: its shape, and that its result is the one the job asked for (same rollout, task,
 * family, split, harness and sample: a node must not answer one job with another's result). Refused answers come
 * back as an `invalid_cluster_result` error saying why; the control plane counts the rollout as failed.
 */
export function parseJobReturn(job: RolloutJob, value: unknown): { ok: true; ret: RolloutJobReturn } | { ok: false; error: UserError } {
  const refuse = (why: string): { ok: false; error: UserError } => ({ ok: false, error: new UserError("invalid_cluster_result", `the answer to rollout job ${job.rolloutId} is refused: ${why}`) });
  const r = rolloutJobReturnSchema.safeParse(value);
  if (!r.success) {
    const first = r.error.issues[0];
    return refuse(`it does not validate: ${first ? `${first.path.join(".") || "(root)"}: ${first.message}` : "unknown"} (${r.error.issues.length} issue(s))`);
  }
  const got = r.data.result;
  const want = { rolloutId: job.rolloutId, taskId: job.task.id, family: job.task.family, split: job.task.split, harness: job.harness, sample: job.sample };
  for (const [k, v] of Object.entries(want)) {
    const g = got[k as keyof typeof want];
    if (g !== v) return refuse(`its result's ${k} is ${JSON.stringify(g).slice(0, 100)}, the job's is ${JSON.stringify(v)} (node ${r.data.nodeId.slice(0, 100)})`);
  }
  return { ok: true, ret: r.data };
}

/** The queue's job id of a rollout: the same rollout enqueued twice (a restarted control plane) is one job. */
export function jobIdOf(runId: string, rolloutId: string): string {
  // BullMQ job ids must not contain ':' in custom ids (its key separator); swap it.
  return `${runId}.${rolloutId}`.replace(/:/g, "_");
}

export type { Task };
