import { join } from "node:path";
import { Queue } from "bullmq";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { redisOptionsOf } from "../../src/cluster/connection.js";
import { ROLLOUT_QUEUE } from "../../src/cluster/job.js";
import { RolloutNode } from "../../src/cluster/node.js";
import { usePrivateRedis } from "./private-redis.js";

/**
 * A payload no node can run (anyone with the queue's password can enqueue one): a real rollout node refuses it once
 * and it lands in the failed set with invalid_cluster_job and why, instead of going through every retry on every
 * node while the run waits for it.
 */
const cluster = usePrivateRedis("hrl-malformed-");
let node: RolloutNode | undefined;
afterAll(async () => {
  await node?.drain().catch(() => undefined);
}, 60_000);

describe("a malformed rollout job on a node", () => {
  it("fails at its first attempt with invalid_cluster_job, though the job allows three", async () => {
    const lines: string[] = [];
    node = new RolloutNode({ cluster: cluster.redis.url, workDir: join(cluster.root, "node"), sandbox: "bwrap", capacity: 1, lockMs: 5000, heartbeatMs: 300, nodeId: "strict-node", log: (l) => lines.push(l) });
    await node.start();
    const queue = new Queue(ROLLOUT_QUEUE, { connection: redisOptionsOf(cluster.redis.url) });
    try {
      await queue.add("rollout", { v: 1, runId: "r", rolloutId: "bad one", task: "not a task" }, { jobId: "r.bad", attempts: 3, backoff: { type: "fixed", delay: 100 } });
      const deadline = Date.now() + 30_000;
      let job = await queue.getJob("r.bad");
      while (Date.now() < deadline && !(await job?.isFailed())) {
        await sleep(100);
        job = await queue.getJob("r.bad");
      }
      expect(await job?.isFailed()).toBe(true);
      // Read again: the copy fetched before the failure was recorded still says 0 attempts made.
      job = await queue.getJob("r.bad");
      expect(job?.attemptsMade).toBe(1);
      expect(job?.failedReason).toMatch(/^invalid_cluster_job: rollout job does not validate/);
      expect(lines.some((l) => l.startsWith("refused job r.bad: "))).toBe(true);
    } finally {
      await queue.close();
    }
  }, 60_000);
});
