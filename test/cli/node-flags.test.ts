import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { redisOptionsOf } from "../../src/cluster/connection.js";
import { ROLLOUT_QUEUE, jobIdOf } from "../../src/cluster/job.js";
import { HEARTBEAT_PREFIX, parseHeartbeat, type NodeHeartbeat } from "../../src/cluster/heartbeat.js";
import { jobsOfPlan } from "../../src/cluster/plan.js";
import { loadSuite } from "../../src/tasks/registry.js";
import { REPO_ROOT, runCli } from "../setup/cli.js";
import { usePrivateRedis } from "../cluster/private-redis.js";
import { killChild } from "../../src/core/kill-child.js";

/**
 * `harnessrl node`'s health and sandbox flags: malformed values are refused in one line before anything starts, and
 * given values reach the node (a state root it cannot create breaks its sandbox host; one infra error then makes it
 * unhealthy for the cooldown given; its memory cap is in its heartbeat).
 */
const cluster = usePrivateRedis("hrl-node-flags-");
const root = cluster.root;

describe("harnessrl node flags", () => {
  it.each([
    [["--unhealthy-after", "0"], /--unhealthy-after must be an integer ≥ 1, got "0"/],
    [["--cooldown-ms", "-5"], /--cooldown-ms must be an integer ≥ 0, got "-5"/],
    [["--setup-timeout-ms", "soon"], /--setup-timeout-ms must be an integer ≥ 100, got "soon"/],
    [["--wedge-grace-ms", "1.5"], /--wedge-grace-ms must be an integer ≥ 0, got "1.5"/],
    [["--sandbox-state-root", " "], /--sandbox-state-root must name a directory/],
    [["--max-memory-mb", "8"], /--max-memory-mb must be an integer from 16 to 1048576, got "8"/],
    [["--max-memory-mb", "lots"], /--max-memory-mb must be an integer from 16 to 1048576, got "lots"/],
  ])("refuses %j in one line", async (flags, why) => {
    // A cluster URL nobody answers: the flags must be refused before the node connects.
    const r = await runCli(["node", "--cluster", "redis://:x@127.0.0.1:1", "--dir", join(root, "refused"), ...flags]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("[invalid_arguments]");
    expect(r.stderr).toMatch(why);
  });

  it("--sandbox-state-root, --unhealthy-after, --cooldown-ms and --max-memory-mb reach the node", async () => {
    // A state root under a regular file: the node's sandbox host cannot start.
    const blocker = join(root, "not-a-dir");
    writeFileSync(blocker, "");
    const nodeId = "flags-node";
    const args = ["node", "--node-id", nodeId, "--dir", join(root, nodeId), "--capacity", "1", "--heartbeat-ms", "300", "--sandbox-state-root", join(blocker, "state"), "--unhealthy-after", "1", "--cooldown-ms", "60000", "--max-memory-mb", "512"];
    const child = spawn(process.execPath, [join(REPO_ROOT, "dist", "cli", "main.js"), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, HARNESSRL_CLUSTER: cluster.redis.url, HARNESSRL_HARNESS_CACHE: process.env.HARNESSRL_HARNESS_CACHE ?? join(REPO_ROOT, ".cache", "harnesses") },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)));
    const queue = new Queue(ROLLOUT_QUEUE, { connection: redisOptionsOf(cluster.redis.url) });
    const client = new Redis(redisOptionsOf(cluster.redis.url));
    try {
      const suite = await loadSuite("arith:test?n=1");
      const [job] = jobsOfPlan({ tasks: suite.tasks, harnesses: ["chat-agent"], samples: 1, idPrefix: "flags" }, { runId: "flags", engine: "oracle", store: null, policyVersion: null, sampling: { temperature: 1, maxTokens: 64 }, settings: { maxTurns: 2, maxTokens: 64, harnessTimeoutMs: 30_000 } });
      await queue.add("rollout", job!, { jobId: jobIdOf("flags", job!.rolloutId), attempts: 1 });
      const deadline = Date.now() + 60_000;
      let hb: NodeHeartbeat | null = null;
      while (Date.now() < deadline && !/unhealthy for/.test(stderr)) await sleep(100);
      expect(stderr).toMatch(/unhealthy for 60000 ms \(1 infra errors in a row\): not pulling jobs/);
      while (Date.now() < deadline) {
        const v = await client.get(`${HEARTBEAT_PREFIX}${nodeId}`);
        hb = v ? parseHeartbeat(v) : null;
        if (hb && !hb.healthy) break;
        await sleep(100);
      }
      // The cap is advertised in the heartbeat (the job asks for no memory, so the node took it).
      expect(hb).toMatchObject({ nodeId, healthy: false, completed: 0, maxMemoryMb: 512 });
      // The job failed on the node's sandbox host, under the state root given. The node counts the infra error before
      // BullMQ records the failure, so wait for the record rather than read it once (read once, it failed in CI).
      let reason = "";
      while (Date.now() < deadline) {
        reason = (await queue.getJob(jobIdOf("flags", job!.rolloutId)))?.failedReason ?? "";
        if (reason) break;
        await sleep(100);
      }
      expect(reason).toContain(join(blocker, "state"));
    } finally {
      killChild(child, "SIGTERM");
      const killer = setTimeout(() => killChild(child, "SIGKILL"), 20_000);
      await exited;
      clearTimeout(killer);
      await queue.close();
      client.disconnect();
    }
    expect(await exited).toBe(0);
  }, 180_000);
});
