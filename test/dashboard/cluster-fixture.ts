import { Queue, Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import { redisOptionsOf } from "../../src/cluster/connection.js";
import { ROLLOUT_QUEUE } from "../../src/cluster/job.js";
import { HEARTBEAT_PREFIX, writeHeartbeat, type NodeHeartbeat } from "../../src/cluster/heartbeat.js";
import { startRedisServer, type RedisServerHandle } from "../../src/cluster/redis-server.js";
import { ClusterStatusReader } from "../../src/cluster/status.js";
import { startDashboard, type Dashboard } from "../../src/dashboard/server.js";

/**
 * A cluster's Redis in a known state, for the cluster page's tests: a private redis-server; the rollout queue with one
 * failed job (its reason recorded by BullMQ), one running (held by a worker that fetched it by hand), three waiting and
 * one delayed; node heartbeats written by the nodes' own writer: `node-a` (capacity 4, 1 running, memory capped at
 * 4096 MiB) and `node-c` (paused after infra errors, no cap) renewed for a minute; `node-b` with a heartbeat that
 * expires after `shortTtlMs`, written as a node older than the memory cap wrote it (no `maxMemoryMb` field).
 */
export interface ClusterFixture {
  redis: RedisServerHandle;
  url: string;
  /** Writes node-b's heartbeat again (expiring `shortTtlMs` from now). */
  beatShortLived(): Promise<void>;
  close(): Promise<void>;
}

export const FAILED_REASON = "sandbox_start_failed: bwrap could not mount /proc";

function heartbeat(nodeId: string, over: Partial<NodeHeartbeat> = {}): NodeHeartbeat {
  const now = Date.now();
  return { nodeId, host: `host-${nodeId}`, capacity: 4, active: 0, healthy: true, spooled: 0, completed: 0, startedAt: now - 90_000, at: now, maxMemoryMb: null, ...over };
}

export async function startClusterFixture(dir: string, shortTtlMs: number): Promise<ClusterFixture> {
  const redis = await startRedisServer({ dir });
  const queue = new Queue(ROLLOUT_QUEUE, { connection: redisOptionsOf(redis.url) });
  const worker = new Worker(ROLLOUT_QUEUE, null, { connection: redisOptionsOf(redis.url, "worker"), lockDuration: 120_000 });
  const client = new Redis(redisOptionsOf(redis.url));
  const data = (i: number) => ({ runId: "fixture", rolloutId: `r${i}` });
  // Oldest first: the worker fetches r0 (fails it), then r1 (keeps it running); r2…r4 wait, r5 is delayed.
  await queue.addBulk([0, 1, 2, 3, 4].map((i) => ({ name: "rollout", data: data(i), opts: { jobId: `fixture.r${i}` } })));
  const failing = (await worker.getNextJob("token-fail")) as Job | undefined;
  if (!failing) throw new Error("fixture: no job to fail");
  await failing.moveToFailed(new Error(FAILED_REASON), "token-fail", false);
  const running = (await worker.getNextJob("token-run")) as Job | undefined;
  if (!running) throw new Error("fixture: no job to run");
  await queue.add("rollout", data(5), { jobId: "fixture.r5", delay: 600_000 });
  await writeHeartbeat(client, heartbeat("node-a", { active: 1, completed: 7, maxMemoryMb: 4096 }), 60_000);
  // node-b's as a node older than the memory cap writes it: without the field (it reads as uncapped).
  const { maxMemoryMb: _old, ...oldBeat } = heartbeat("node-b", { capacity: 2 });
  const beatShortLived = async (): Promise<void> => {
    await client.set(`${HEARTBEAT_PREFIX}node-b`, JSON.stringify({ ...oldBeat, at: Date.now() }), "PX", shortTtlMs);
  };
  await beatShortLived();
  await writeHeartbeat(client, heartbeat("node-c", { healthy: false, spooled: 3 }), 60_000);
  return {
    redis,
    url: redis.url,
    beatShortLived,
    close: async () => {
      await worker.close(true).catch(() => undefined);
      await queue.close().catch(() => undefined);
      client.disconnect();
      await redis.stop();
    },
  };
}

/** The fixture, a status reader over it and a dashboard of `runs` that shows it (the cluster page's tests). */
export interface ClusterDashboard {
  fixture: ClusterFixture;
  reader: ClusterStatusReader;
  dash: Dashboard;
  /** Stops the dashboard, the reader and the fixture, in that order. */
  close(): Promise<void>;
}

export async function startClusterDashboard(runs: string, redisDir: string, shortTtlMs: number): Promise<ClusterDashboard> {
  const fixture = await startClusterFixture(redisDir, shortTtlMs);
  const reader = new ClusterStatusReader(fixture.url);
  const dash = await startDashboard({ runs, port: 0, cluster: reader });
  return {
    fixture,
    reader,
    dash,
    close: async () => {
      await dash.close();
      await reader.close();
      await fixture.close();
    },
  };
}
