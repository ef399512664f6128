import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { InfraError, errorMessage } from "../core/errors.js";
import { redisOptionsOf } from "./connection.js";
import { ROLLOUT_QUEUE } from "./job.js";
import { readHeartbeats } from "./heartbeat.js";

/**
 * One rollout node as the cluster page shows it. `up`: its heartbeat is in Redis and it pulls jobs; `cooling`: its
 * heartbeat is fresh but it paused itself after infra errors in a row; `lost`: its heartbeat expired (the node died,
 * stopped or lost Redis) while this reader was watching. Healthy means `up`.
 */
export interface ClusterNodeStatus {
  nodeId: string;
  host: string;
  state: "up" | "cooling" | "lost";
  healthy: boolean;
  capacity: number;
  running: number;
  completed: number;
  spooled: number;
  startedAt: number;
  lastSeenAt: number;
  /** The node's `--max-memory-mb` (the most sandbox memory a job may ask for there); null: no cap (or a node older than the field). */
  maxMemoryMb: number | null;
}

/** A job in the failed set (the dead-letter place): its id, why its last attempt failed, attempts made. */
export interface FailedJobStatus {
  id: string;
  reason: string;
  attempts: number;
  failedAt: number | null;
}

export interface ClusterStatus {
  queue: string;
  at: number;
  nodes: ClusterNodeStatus[];
  jobs: { waiting: number; running: number; failed: number; delayed: number; completed: number };
  /** The most recent failures, newest first (at most `failedShown`). */
  failed: FailedJobStatus[];
}

export interface ClusterStatusOptions {
  /** A node whose heartbeat is gone stays listed as lost for this long (default 10 min), then disappears. */
  forgetLostAfterMs?: number;
  failedShown?: number;
}

/**
 * Reads the cluster's state from its Redis, read-only: node heartbeats (`harnessrl:node:<id>`, which expire unless
 * renewed) and the rollout queue's job counts and failed set. It remembers nodes it has seen, so a node whose heartbeat
 * expired shows as lost instead of silently vanishing. Connections are lazy: a dashboard starts while Redis is down,
 * and each snapshot then fails with `cluster_unreachable` until it answers.
 */
export class ClusterStatusReader {
  private readonly queue: Queue;
  private readonly client: Redis;
  private readonly seen = new Map<string, ClusterNodeStatus>();

  constructor(
    url: string,
    private readonly o: ClusterStatusOptions = {},
  ) {
    // Fail fast rather than queue commands through a Redis outage: the page polls again in two seconds.
    const opts = { ...redisOptionsOf(url), maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true };
    this.client = new Redis(opts);
    this.client.on("error", () => undefined);
    this.queue = new Queue(ROLLOUT_QUEUE, { connection: { ...redisOptionsOf(url), maxRetriesPerRequest: 1 } });
    this.queue.on("error", () => undefined);
  }

  async snapshot(): Promise<ClusterStatus> {
    try {
      return await this.read();
    } catch (e) {
      throw new InfraError("cluster_unreachable", `cannot read the cluster's Redis: ${errorMessage(e)}`, { cause: e });
    }
  }

  private async read(): Promise<ClusterStatus> {
    if (this.client.status === "wait") await this.client.connect();
    const now = Date.now();
    const beats = await readHeartbeats(this.client);
    const live = new Set<string>();
    for (const hb of beats) {
      live.add(hb.nodeId);
      const state = hb.healthy ? "up" : "cooling";
      this.seen.set(hb.nodeId, {
        nodeId: hb.nodeId,
        host: hb.host,
        state,
        healthy: state === "up",
        capacity: hb.capacity,
        running: hb.active,
        completed: hb.completed,
        spooled: hb.spooled,
        startedAt: hb.startedAt,
        lastSeenAt: hb.at,
        maxMemoryMb: hb.maxMemoryMb,
      });
    }
    const forget = this.o.forgetLostAfterMs ?? 600_000;
    for (const [id, n] of this.seen) {
      if (live.has(id)) continue;
      if (now - n.lastSeenAt > forget) this.seen.delete(id);
      // A lost node runs nothing we know of; its jobs' locks expire and the queue hands them to others.
      else this.seen.set(id, { ...n, state: "lost", healthy: false, running: 0 });
    }
    const c = await this.queue.getJobCounts("waiting", "prioritized", "active", "delayed", "completed", "failed");
    const failedJobs = await this.queue.getFailed(0, (this.o.failedShown ?? 20) - 1);
    const failed = failedJobs.map((j) => ({ id: String(j.id ?? ""), reason: j.failedReason || "failed", attempts: j.attemptsMade, failedAt: j.finishedOn ?? null }));
    return {
      queue: ROLLOUT_QUEUE,
      at: now,
      nodes: [...this.seen.values()].sort((a, b) => a.nodeId.localeCompare(b.nodeId)),
      jobs: { waiting: (c.waiting ?? 0) + (c.prioritized ?? 0), running: c.active ?? 0, failed: c.failed ?? 0, delayed: c.delayed ?? 0, completed: c.completed ?? 0 },
      failed,
    };
  }

  async close(): Promise<void> {
    await this.queue.close().catch(() => undefined);
    this.client.disconnect();
  }
}
