import { setTimeout as sleep } from "node:timers/promises";
import { Job, Queue, QueueEvents } from "bullmq";
import { Redis } from "ioredis";
import { InfraError, errorMessage } from "../core/errors.js";
import { redisOptionsOf } from "./connection.js";
import { ROLLOUT_QUEUE, jobIdOf, parseJobReturn, type RolloutJob, type RolloutJobReturn } from "./job.js";
import { readHeartbeats, type NodeHeartbeat } from "./heartbeat.js";
import { memoryFitWarning } from "./memory-fit.js";

/** How a dispatched rollout ended: completed on some node, or in the failed set (the dead-letter place) with why. */
export type GatheredRollout = { rolloutId: string; outcome: "completed"; ret: RolloutJobReturn; times: JobTimes } | { rolloutId: string; outcome: "failed"; reason: string; attempts: number };

/** Queue timestamps of a completed job (ms since the epoch) and when the control plane learnt of its end. */
export interface JobTimes {
  addedAt: number;
  processedOn: number;
  finishedOn: number;
  gatheredAt: number;
}

export interface DispatchOptions {
  /** Attempts per job before it goes to the failed set (default 3). */
  attempts?: number;
  /** First retry delay; doubles per attempt (default 1000 ms). */
  backoffMs?: number;
  /** BullMQ priority (1 = most urgent; unset = before every prioritised job). */
  priority?: number;
  /** Give up waiting after this long (default: 1 h); what is still pending then is reported failed. */
  timeoutMs?: number;
  /** Reconciliation poll for jobs whose events were missed (a Redis restart drops the event stream). */
  pollMs?: number;
  onGathered?: (g: GatheredRollout, done: number, total: number) => void;
}

/**
 * The control plane's side of the queue: enqueues rollout jobs under deterministic ids (so a restarted control plane
 * re-adding a step's jobs finds the same jobs, finished or not: nothing is lost or run twice) and gathers their ends.
 * Ends are learnt from queue events and, because events can be missed, from a periodic look at each pending job.
 */
export class ClusterDispatcher {
  private constructor(
    private readonly queue: Queue,
    private readonly events: QueueEvents,
    private readonly client: Redis,
  ) {}

  static async open(url: string): Promise<ClusterDispatcher> {
    const queue = new Queue(ROLLOUT_QUEUE, { connection: redisOptionsOf(url) });
    const events = new QueueEvents(ROLLOUT_QUEUE, { connection: redisOptionsOf(url, "worker") });
    const client = new Redis(redisOptionsOf(url));
    queue.on("error", () => undefined);
    events.on("error", () => undefined);
    client.on("error", () => undefined);
    try {
      await Promise.race([
        Promise.all([queue.waitUntilReady(), events.waitUntilReady(), client.ping()]),
        sleep(15_000).then(() => {
          throw new InfraError("cluster_unreachable", "the cluster's Redis did not answer within 15 s");
        }),
      ]);
    } catch (e) {
      await Promise.allSettled([queue.close(), events.close()]);
      client.disconnect();
      throw e instanceof InfraError ? e : new InfraError("cluster_unreachable", `cannot reach the cluster's Redis: ${errorMessage(e)}`, { cause: e });
    }
    return new ClusterDispatcher(queue, events, client);
  }

  /** Nodes whose heartbeat has not expired (each validated: a value that is not a heartbeat is skipped). */
  nodes(): Promise<NodeHeartbeat[]> {
    return readHeartbeats(this.client);
  }

  /**
   * A warning line when the nodes up now are capped below `memoryMb` (all of them, or some: see
   * {@link memoryFitWarning}), else null. The control plane logs it before adding a run's jobs; it refuses nothing.
   */
  async memoryWarning(memoryMb: number | undefined): Promise<string | null> {
    return memoryFitWarning(await this.nodes(), memoryMb);
  }

  /** Enqueues every job (idempotently) and waits until each has completed or failed for good. Results keep input order. */
  async run(jobs: readonly RolloutJob[], options: DispatchOptions = {}): Promise<GatheredRollout[]> {
    const attempts = options.attempts ?? 3;
    const idOf = new Map<string, number>();
    jobs.forEach((j, i) => idOf.set(jobIdOf(j.runId, j.rolloutId), i));
    const ends = new Array<GatheredRollout | undefined>(jobs.length);
    let done = 0;
    const pending = new Set(idOf.keys());
    const finish = (id: string, g: GatheredRollout): void => {
      const i = idOf.get(id);
      if (i === undefined || ends[i]) return;
      ends[i] = g;
      pending.delete(id);
      done++;
      options.onGathered?.(g, done, jobs.length);
    };
    const look = async (id: string): Promise<void> => {
      // State first, then the job's hash: a job read while active and found completed a moment later would have no
      // return value yet (the move to completed writes both at once).
      const state = await this.queue.getJobState(id);
      if (state !== "completed" && state !== "failed") return;
      const job = await Job.fromId(this.queue, id);
      if (!job) return;
      const asked = jobs[idOf.get(id)!]!;
      const rolloutId = asked.rolloutId;
      if (state === "completed") {
        // A node's answer is untrusted (it could forge a reward or answer with another rollout's result).
        const ret = parseJobReturn(asked, job.returnvalue);
        const times = { addedAt: job.timestamp, processedOn: job.processedOn ?? 0, finishedOn: job.finishedOn ?? 0, gatheredAt: Date.now() };
        if (ret.ok) finish(id, { rolloutId, outcome: "completed", ret: ret.ret, times });
        else finish(id, { rolloutId, outcome: "failed", reason: `${ret.error.code}: ${ret.error.message}`, attempts: job.attemptsMade });
      } else if (state === "failed") {
        finish(id, { rolloutId, outcome: "failed", reason: job.failedReason || "failed", attempts: job.attemptsMade });
      }
    };
    let wake: (() => void) | null = null;
    const dirty = new Set<string>();
    const onEnd = ({ jobId }: { jobId: string }): void => {
      if (!pending.has(jobId)) return;
      dirty.add(jobId);
      wake?.();
    };
    this.events.on("completed", onEnd);
    this.events.on("failed", onEnd);
    try {
      // Existing ids are left as they are (BullMQ ignores an add whose id exists): a resumed run re-adds safely.
      for (let i = 0; i < jobs.length; i += 500) {
        await this.queue.addBulk(
          jobs.slice(i, i + 500).map((data) => ({
            name: "rollout",
            data,
            opts: {
              jobId: jobIdOf(data.runId, data.rolloutId),
              attempts,
              backoff: { type: "exponential", delay: options.backoffMs ?? 1000 },
              ...(options.priority !== undefined ? { priority: options.priority } : {}),
              removeOnComplete: { age: 7 * 24 * 3600 },
            },
          })),
        );
      }
      const deadline = Date.now() + (options.timeoutMs ?? 3600_000);
      const pollMs = options.pollMs ?? 2000;
      let lastPoll = 0;
      while (pending.size > 0 && Date.now() < deadline) {
        const now = Date.now();
        const batch = now - lastPoll >= pollMs ? [...pending] : [...dirty];
        if (now - lastPoll >= pollMs) lastPoll = now;
        dirty.clear();
        for (let i = 0; i < batch.length; i += 100) await Promise.all(batch.slice(i, i + 100).map((id) => look(id).catch(() => undefined)));
        if (pending.size === 0) break;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.min(pollMs, Math.max(0, deadline - Date.now())));
          wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        wake = null;
      }
      for (const id of pending) finish(id, { rolloutId: jobs[idOf.get(id)!]!.rolloutId, outcome: "failed", reason: "cluster_timeout: the control plane stopped waiting", attempts: 0 });
    } finally {
      this.events.off("completed", onEnd);
      this.events.off("failed", onEnd);
    }
    return ends.map((g) => g!);
  }

  /** Job counts by state, for progress lines and tests. */
  async counts(): Promise<Record<string, number>> {
    return this.queue.getJobCounts("waiting", "active", "delayed", "prioritized", "completed", "failed");
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.events.close(), this.queue.close()]);
    this.client.disconnect();
  }
}
