import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runRolloutJob } from "../../src/cli/rollout-job.js";
import { RolloutNode, type NodeOptions } from "../../src/cluster/node.js";
import { registerHarness } from "../../src/harness/registry.js";
import { createCommandHarness } from "../../src/harness/real/command.js";
import { AGENT_RESERVE } from "../../src/sandbox/bwrap/cell.js";
import { usePrivateRedis } from "./private-redis.js";

/**
 * A job's sandbox memory limit on a real rollout node (in this process, real bwrap sandboxes, a private redis-server,
 * the `rollout --cluster` command's own code as the control plane). The harness waits a moment, then holds 160 MiB:
 * under a 64 MiB job limit the kernel's OOM killer ends it (status `oom`), under the node's 2 GiB default it exits
 * 0. While it waits, the test reads the limit the sandbox's memory cgroup was given (its state.json names the
 * cgroup): the job's memoryMb plus the bwrap agent's reserve.
 */
const cluster = usePrivateRedis("hrl-node-memory-");
const root = cluster.root;
const MiB = 1024 * 1024;
const HOG = 160;

registerHarness(
  createCommandHarness({
    name: "mem-hog",
    // Bytes that are written (not calloc's untouched zero pages), so every one of them is charged to the cgroup.
    command: `sleep 2; exec python3 -c 'b = b"\\x01" * (${HOG} << 20); print(len(b) >> 20, "MiB held")'`,
  }),
);

const nodes: RolloutNode[] = [];
afterAll(async () => {
  for (const n of nodes) await n.drain().catch(() => undefined);
}, 60_000);

async function startNode(o: Omit<NodeOptions, "cluster" | "workDir" | "sandbox" | "sandboxStateRoot" | "log" | "capacity">): Promise<{ node: RolloutNode; lines: string[]; stateRoot: string }> {
  const lines: string[] = [];
  const stateRoot = join(root, `${o.nodeId}-sandboxes`);
  const node = new RolloutNode({ cluster: cluster.redis.url, workDir: join(root, o.nodeId), sandbox: "bwrap", sandboxStateRoot: stateRoot, capacity: 2, lockMs: 5000, heartbeatMs: 300, log: (l) => lines.push(l), ...o });
  nodes.push(node);
  await node.start();
  return { node, lines, stateRoot };
}

/**
 * Watches a node's live sandboxes and keeps, per task, the last memory limit their cgroup had (a pooled sandbox is
 * given its limits when it is handed out; the last value seen is the rollout's).
 */
function watchLimits(stateRoot: string): { limits: Map<string, number>; stop: () => void } {
  const limits = new Map<string, number>();
  const look = (): void => {
    for (const id of existsSync(stateRoot) ? readdirSync(stateRoot) : []) {
      try {
        const st = JSON.parse(readFileSync(join(stateRoot, id, "state.json"), "utf8")) as { labels?: Record<string, string>; cgroups?: { memory?: string } };
        const task = st.labels?.task;
        const dir = st.cgroups?.memory;
        if (st.labels?.harness !== "mem-hog" || !task || !dir) continue;
        const file = existsSync(join(dir, "memory.max")) ? join(dir, "memory.max") : join(dir, "memory.limit_in_bytes");
        limits.set(task, Number(readFileSync(file, "utf8").trim()));
      } catch {
        // a sandbox starting or going away
      }
    }
  };
  const timer = setInterval(look, 50);
  return { limits, stop: () => clearInterval(timer) };
}

const rollout = (out: string, tasks: string, extra: Record<string, string> = {}): ReturnType<typeof runRolloutJob> =>
  runRolloutJob("rollout", { cluster: cluster.redis.url, tasks, harness: "mem-hog", out: join(root, out), "timeout-s": "30", ...extra }, { tasks });

describe("a rollout job's sandbox memory limit on a node", () => {
  it("is the job's memoryMb (160 MiB held: OOM-killed under 64 MiB); a job without one gets the node's 2 GiB default", async () => {
    const n = await startNode({ nodeId: "mem-node" });
    const watch = watchLimits(n.stateRoot);
    try {
      // Two tasks (seeds) so each rollout's sandbox is told apart by its task label; both run at once.
      const [small, dflt] = await Promise.all([rollout("out-small", "arith:test?n=1&seed=11", { "memory-mb": "64" }), rollout("out-default", "arith:test?n=1&seed=12")]);
      const [s] = small.results;
      const [d] = dflt.results;
      expect(s?.status, JSON.stringify(s)).toBe("oom");
      expect(s?.signal).toBe("SIGKILL");
      expect(d?.status, JSON.stringify(d)).toBe("task_failed");
      expect(d?.exitCode).toBe(0);
      expect(d?.stdout).toContain(`${HOG} MiB held`);
      expect(watch.limits.get(s!.taskId)).toBe(64 * MiB + AGENT_RESERVE.memoryBytes);
      expect(watch.limits.get(d!.taskId)).toBe(2048 * MiB + AGENT_RESERVE.memoryBytes);
    } finally {
      watch.stop();
      await n.node.drain();
      nodes.splice(nodes.indexOf(n.node), 1);
    }
  }, 60_000);

  it("over the node's --max-memory-mb: the job fails at once (one attempt) with cluster_job_memory_over_cap; a job without one gets the cap", async () => {
    const n = await startNode({ nodeId: "capped-node", maxMemoryMb: 128 });
    const watch = watchLimits(n.stateRoot);
    try {
      const [over, dflt] = await Promise.all([rollout("out-over", "arith:test?n=1&seed=13", { "memory-mb": "256" }), rollout("out-capped", "arith:test?n=1&seed=14")]);
      const [o] = over.results;
      const [d] = dflt.results;
      expect(o?.status).toBe("infra_error");
      expect(o?.error).toMatch(/^cluster_job_failed: dropped after 1 attempt\(s\), in the queue's failed set: cluster_job_memory_over_cap: rollout \S+ asks for 256 MiB of sandbox memory; node capped-node allows at most 128 MiB/);
      expect(n.lines.some((l) => /^refused \S+: rollout \S+ asks for 256 MiB/.test(l))).toBe(true);
      // Refused before any sandbox: none was made for that task. The other one ran under the cap and was OOM-killed.
      expect(watch.limits.has(o!.taskId)).toBe(false);
      expect(d?.status, JSON.stringify(d)).toBe("oom");
      expect(watch.limits.get(d!.taskId)).toBe(128 * MiB + AGENT_RESERVE.memoryBytes);
    } finally {
      watch.stop();
      await n.node.drain();
      nodes.splice(nodes.indexOf(n.node), 1);
    }
  }, 60_000);
});

describe("the same limit on one machine", () => {
  it("rollout --memory-mb 64 (no --cluster) is the sandbox's limit too: the 160 MiB hog is OOM-killed", async () => {
    const tasks = "arith:test?n=1&seed=15";
    const { results } = await runRolloutJob("rollout", { tasks, harness: "mem-hog", out: join(root, "out-local"), "timeout-s": "30", "memory-mb": "64", concurrency: "1" }, { tasks });
    expect(results.map((r) => r.status)).toEqual(["oom"]);
  }, 60_000);
});
