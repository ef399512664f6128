import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "bullmq";
import { describe, expect, it } from "vitest";
import { runRolloutJob } from "../../src/cli/rollout-job.js";
import { redisOptionsOf } from "../../src/cluster/connection.js";
import { ROLLOUT_QUEUE, parseRolloutJob, type RolloutJob } from "../../src/cluster/job.js";
import { loadSuite } from "../../src/tasks/registry.js";
import { pendingRolloutResult, type RolloutResult } from "../../src/tasks/rollout-result.js";
import { usePrivateRedis } from "./private-redis.js";

/**
 * A rogue node (anything holding the queue's password can run one) answers rollout jobs with forged or malformed
 * results; the `rollout --cluster` command's own code gathers them from a private redis-server. Only the honest answer
 * counts; the others become infra errors that name invalid_cluster_result and why, and the gather still ends.
 */
const cluster = usePrivateRedis("hrl-forged-");

/** What an honest node would answer: a passing rollout, its score the verifier's. */
function honest(job: RolloutJob): RolloutResult {
  const r = pendingRolloutResult({ rolloutId: job.rolloutId, taskId: job.task.id, harness: job.harness, sample: job.sample }, job.task, Date.now());
  return { ...r, status: "ok", score: 1, verifier: { score: 1, subscores: {} } };
}

/** One answer per task, by the task's position in the suite. */
const ANSWERS: ((job: RolloutJob) => unknown)[] = [
  (job) => honest(job),
  // A reward out of range.
  (job) => ({ ...honest(job), score: 7, verifier: { score: 7, subscores: {} } }),
  // A reward with no verifier behind it.
  (job) => ({ ...honest(job), verifier: null }),
  // Another rollout's (passing) result answering this job.
  (job) => ({ ...honest(job), rolloutId: `${job.rolloutId}-other` }),
  // A result of the right rollout for another harness.
  (job) => ({ ...honest(job), harness: "other-harness" }),
  // Not a result at all.
  () => "score=1",
];

describe("gathering answers from a rogue rollout node", () => {
  it("counts only the honest answer; forged and malformed ones fail with invalid_cluster_result", async () => {
    let order: string[] = [];
    const rogue = new Worker(
      ROLLOUT_QUEUE,
      async (bullJob) => {
        const job = parseRolloutJob(bullJob.data);
        const i = order.indexOf(job.task.id);
        return Promise.resolve({ result: ANSWERS[i]!(job), delivery: "landed", attempt: 1, nodeId: "rogue" });
      },
      { connection: redisOptionsOf(cluster.redis.url, "worker"), concurrency: 2, autorun: false },
    );
    rogue.on("error", () => undefined);
    void rogue.run();
    const out = join(cluster.root, "out");
    try {
      const n = ANSWERS.length;
      // The arith suite's task ids, in plan order: the rogue picks its answer by position.
      order = (await loadSuite(`arith:test?n=${n}`)).tasks.map((t) => t.id);
      const { results } = await runRolloutJob("rollout", { cluster: cluster.redis.url, tasks: `arith:test?n=${n}`, out }, { tasks: `arith:test?n=${n}` });
      expect(results).toHaveLength(n);
      expect(results[0]).toMatchObject({ status: "ok", score: 1, error: null });
      for (const r of results.slice(1)) {
        expect(r.status, r.rolloutId).toBe("infra_error");
        expect(r.score).toBe(0);
        expect(r.error).toMatch(/^cluster_job_failed: .*invalid_cluster_result: the answer to rollout job /);
      }
      const why = results.map((r) => r.error ?? "");
      expect(why[1]).toMatch(/result\.score: .*<=1/);
      expect(why[2]).toMatch(/result\.score: score differs from the verifier's score/);
      expect(why[3]).toMatch(/its result's rolloutId is ".*-other", the job's is /);
      expect(why[4]).toMatch(/its result's harness is "other-harness", the job's is "chat-agent"/);
      expect(why[5]).toMatch(/it does not validate: result: /);
      // The results file the command writes holds the same verdicts: one pass among six.
      const lines = readFileSync(join(out, "rollouts.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RolloutResult);
      expect(lines.filter((r) => r.status === "ok").map((r) => r.rolloutId)).toEqual([results[0]!.rolloutId]);
    } finally {
      await rogue.close();
    }
  }, 120_000);
});
