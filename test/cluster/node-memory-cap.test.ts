import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, vi } from "vitest";
import { runRolloutJob } from "../../src/cli/rollout-job.js";
import { redisOptionsOf } from "../../src/cluster/connection.js";
import { ClusterDispatcher } from "../../src/cluster/dispatch.js";
import { HEARTBEAT_PREFIX } from "../../src/cluster/heartbeat.js";
import { RolloutNode, type NodeOptions } from "../../src/cluster/node.js";
import type { HotSwappableEngine } from "../../src/engine/types.js";
import { buildRunContext } from "../../src/run/context.js";
import { ClusterSteps } from "../../src/train/cluster-launch.js";
import { parseRunConfig } from "../../src/train/config.js";
import { usePrivateRedis } from "./private-redis.js";

/**
 * A node's memory cap (`--max-memory-mb`) advertised and acted on, over a private redis-server with real rollout
 * nodes (in this process; they run no rollout here, so no sandbox is made): the heartbeat carries the cap, old and
 * foreign heartbeats still read, and the control plane (`rollout --cluster`, a training run's `ClusterSteps.open`)
 * warns when the nodes up are capped below the run's memory.
 */
const cluster = usePrivateRedis("hrl-node-memory-cap-");
const root = cluster.root;

const nodes: RolloutNode[] = [];
afterAll(async () => {
  for (const n of nodes) await n.drain().catch(() => undefined);
}, 60_000);

async function startNode(o: Pick<NodeOptions, "nodeId" | "capacity" | "maxMemoryMb">): Promise<{ node: RolloutNode; lines: string[] }> {
  const lines: string[] = [];
  const node = new RolloutNode({ cluster: cluster.redis.url, workDir: join(root, o.nodeId), sandbox: "bwrap", lockMs: 5000, heartbeatMs: 300, log: (l) => lines.push(l), ...o });
  nodes.push(node);
  await node.start();
  return { node, lines };
}

async function stopNode(node: RolloutNode): Promise<void> {
  await node.drain();
  nodes.splice(nodes.indexOf(node), 1);
}

describe("a node's memory cap in its heartbeat", () => {
  it("carries maxMemoryMb (null when uncapped); a heartbeat without the field reads uncapped; a foreign value is skipped", async () => {
    const capped = await startNode({ nodeId: "cap-128", capacity: 2, maxMemoryMb: 128 });
    const open = await startNode({ nodeId: "cap-none", capacity: 3 });
    const client = new Redis(redisOptionsOf(cluster.redis.url));
    const dispatcher = await ClusterDispatcher.open(cluster.redis.url);
    try {
      expect(capped.lines).toContain("ready: capacity 2, memory cap 128 MiB, queue harnessrl-rollouts");
      expect(open.lines).toContain("ready: capacity 3, no memory cap, queue harnessrl-rollouts");
      // What the node wrote, as written.
      expect(JSON.parse((await client.get(`${HEARTBEAT_PREFIX}cap-128`)) ?? "{}")).toMatchObject({ nodeId: "cap-128", capacity: 2, maxMemoryMb: 128 });
      expect(JSON.parse((await client.get(`${HEARTBEAT_PREFIX}cap-none`)) ?? "{}")).toMatchObject({ nodeId: "cap-none", capacity: 3, maxMemoryMb: null });
      // A node older than the field, and values under the prefix that are not heartbeats.
      const now = Date.now();
      await client.set(`${HEARTBEAT_PREFIX}old-node`, JSON.stringify({ nodeId: "old-node", host: "h", capacity: 1, active: 0, healthy: true, spooled: 0, completed: 0, startedAt: now, at: now }), "PX", 60_000);
      await client.set(`${HEARTBEAT_PREFIX}torn`, '{"nodeId": "torn", "capa', "PX", 60_000);
      await client.set(`${HEARTBEAT_PREFIX}forged`, JSON.stringify({ nodeId: "forged", capacity: 1, at: now, maxMemoryMb: "lots" }), "PX", 60_000);
      expect((await dispatcher.nodes()).map((n) => [n.nodeId, n.capacity, n.maxMemoryMb])).toEqual([
        ["cap-128", 2, 128],
        ["cap-none", 3, null],
        ["old-node", 1, null],
      ]);
      await client.del(`${HEARTBEAT_PREFIX}old-node`, `${HEARTBEAT_PREFIX}torn`, `${HEARTBEAT_PREFIX}forged`);
      // Some nodes fit: the warning says how many slots can take the jobs; all fit or no memory asked: no warning.
      expect(await dispatcher.memoryWarning(256)).toBe(
        "warning: only 1 of 2 node(s) up (3 of 5 slots) can take this run's jobs of 256 MiB of sandbox memory; the other 1 node(s) are capped below it (cap-128 128 MiB; --max-memory-mb), and a job one of them takes fails for good with cluster_job_memory_over_cap.",
      );
      expect(await dispatcher.memoryWarning(128)).toBeNull();
      expect(await dispatcher.memoryWarning(undefined)).toBeNull();
    } finally {
      client.disconnect();
      await dispatcher.close();
      await stopNode(capped.node);
      await stopNode(open.node);
    }
  }, 30_000);
});

describe("the control plane's warning when no node up can take the run's memory", () => {
  it("rollout --cluster --memory-mb 256 with only a 128 MiB node: the warning is in the command's log, and the job is refused by the node", async () => {
    const capped = await startNode({ nodeId: "small-node", capacity: 2, maxMemoryMb: 128 });
    const logged: string[] = [];
    const spy = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(" ")));
    try {
      const tasks = "arith:test?n=1&seed=21";
      const { results } = await runRolloutJob("rollout", { cluster: cluster.redis.url, tasks, out: join(root, "out-over"), "memory-mb": "256" }, { tasks });
      expect(logged[0]).toBe(
        "rollout: cluster: warning: no node up can take this run's jobs: they ask for 256 MiB of sandbox memory and all 1 node(s) up (2 slots) are capped below it (small-node 128 MiB; --max-memory-mb). A job any of them takes fails for good with cluster_job_memory_over_cap; start a node with a larger cap or none, or lower the run's memory.",
      );
      // Warned, not refused: the job was added, and the node refused it as before.
      expect(results.map((r) => r.status)).toEqual(["infra_error"]);
      expect(results[0]?.error).toMatch(/cluster_job_memory_over_cap: rollout \S+ asks for 256 MiB/);
    } finally {
      spy.mockRestore();
      await stopNode(capped.node);
    }
  }, 30_000);

  it("a training run's ClusterSteps.open logs it next to the nodes it found (rollout.memory_mb 1024, one node capped at 512)", async () => {
    const capped = await startNode({ nodeId: "train-node", capacity: 4, maxMemoryMb: 512 });
    const config = parseRunConfig({ model: { preset: "tiny-1m" }, harnesses: ["chat-agent"], tasks: { train: "arith:train" }, engine: { kind: "llamacpp-http", url: "http://127.0.0.1:1" }, rollout: { memory_mb: 1024 }, cluster: { queue: cluster.redis.url, store: `sqlite:${join(root, "central.sqlite")}` } });
    const lines: string[] = [];
    // open() keeps the run's engine for the steps and calls nothing of it; this test opens and closes only.
    const engine = {} as HotSwappableEngine;
    try {
      const steps = await ClusterSteps.open(buildRunContext(config, { runDir: join(root, "train-run") }), engine, join(root, "policy"), (l) => lines.push(l));
      await steps.close();
      expect(lines[0]).toMatch(/^cluster: run \S+ on redis:\/\/…@127\.0\.0\.1:\d+, 1 node\(s\) up now \(4 slots\)/);
      expect(lines[1]).toBe(
        "cluster: warning: no node up can take this run's jobs: they ask for 1024 MiB of sandbox memory and all 1 node(s) up (4 slots) are capped below it (train-node 512 MiB; --max-memory-mb). A job any of them takes fails for good with cluster_job_memory_over_cap; start a node with a larger cap or none, or lower the run's memory.",
      );
    } finally {
      await stopNode(capped.node);
    }
  }, 30_000);
});
