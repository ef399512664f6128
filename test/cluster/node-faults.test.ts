import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { startLocalPostgres, type LocalPostgres } from "../../scripts/local-postgres.mjs";
import { runRolloutJob } from "../../src/cli/rollout-job.js";
import { RolloutNode, type NodeOptions } from "../../src/cluster/node.js";
import { ClusterStatusReader } from "../../src/cluster/status.js";
import { registerSandboxBackend, sandboxBackends } from "../../src/sandbox/registry.js";
import type { ExecResult, Sandbox, SandboxBackend } from "../../src/sandbox/types.js";
import { PostgresStore } from "../../src/store/postgres.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import { usePrivateRedis } from "./private-redis.js";

/**
 * Node-side faults with real rollout nodes in this process (real bwrap sandboxes, real capture proxies, the oracle
 * policy), a private redis-server and the `rollout --cluster` command's own code as the control plane: the central
 * Postgres store going away for a while, and a node whose sandbox host cannot start sandboxes.
 */
process.env.HARNESSRL_HARNESS_CACHE ??= join(process.cwd(), ".cache", "harnesses");

const cluster = usePrivateRedis("hrl-node-faults-");
const root = cluster.root;
const nodes: RolloutNode[] = [];

interface Logged {
  node: RolloutNode;
  lines: string[];
}

async function startNode(o: Omit<NodeOptions, "cluster" | "workDir" | "sandbox" | "log"> & { sandbox?: string }): Promise<Logged> {
  const lines: string[] = [];
  const node = new RolloutNode({ cluster: cluster.redis.url, workDir: join(root, o.nodeId), sandbox: "bwrap", lockMs: 5000, heartbeatMs: 300, log: (l) => lines.push(l), ...o });
  nodes.push(node);
  await node.start();
  return { node, lines };
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 120_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

afterAll(async () => {
  for (const n of nodes) await n.drain().catch(() => undefined);
}, 60_000);

describe("rollout node faults (in-process nodes, real Redis)", () => {
  let pg: LocalPostgres | undefined;
  afterAll(async () => {
    await pg?.stop();
  }, 60_000);

  it("keeps finished rollouts in its spool while Postgres is down and uploads them later, each landing once", async () => {
    pg = await startLocalPostgres();
    // Short timeouts: an unreachable store answers store_unreachable within a couple of seconds.
    const spec = `${pg.url}?schema=faults&connect_timeout=2&query_timeout=5`;
    const n = await startNode({ nodeId: "pg-node", capacity: 2, spoolRetryMs: 500 });
    const central = new PostgresStore(spec);
    const out = join(root, "out-pg");
    let spooledSeen = 0;
    try {
      const run = runRolloutJob("rollout", { cluster: cluster.redis.url, store: spec, tasks: "arith:test?n=8", out }, { tasks: "arith:test?n=8" });
      // Cut Postgres off once the first rollout has landed: later ones finish while it is away.
      await until("the first landing", () => central.listLandedRollouts().length > 0);
      await pg.pause();
      const reader = new ClusterStatusReader(cluster.redis.url);
      try {
        await until("a spooled rollout in the node's heartbeat", async () => {
          const s = await reader.snapshot();
          spooledSeen = Math.max(spooledSeen, s.nodes.find((x) => x.nodeId === "pg-node")?.spooled ?? 0);
          return spooledSeen >= 2;
        });
      } finally {
        await reader.close();
      }
      await pg.resume();
      const { results } = await run;
      expect(results).toHaveLength(8);
      expect(results.filter((r) => r.status === "ok")).toHaveLength(8);
      // The spool drains once Postgres answers again.
      await until("the spool to drain", () => central.listLandedRollouts().length === 8, 60_000);
      const rows = central.listLandedRollouts();
      expect(new Set(rows.map((r) => r.rolloutId))).toEqual(new Set(results.map((r) => r.rolloutId)));
      expect(rows.every((r) => r.nodeId === "pg-node" && r.attempt === 1)).toBe(true);
      // Each rollout's calls landed once: as many as the node counted for the result, every call id distinct.
      for (const r of results) {
        const calls = central.listCalls({ rolloutId: r.rolloutId });
        expect(calls.length, r.rolloutId).toBe(r.calls);
        expect(r.calls).toBeGreaterThan(0);
        expect(new Set(calls.map((c) => c.callId)).size).toBe(calls.length);
      }
      expect(n.lines.some((l) => /store unreachable \(store_unreachable\); spooled/.test(l))).toBe(true);
      expect(n.lines.some((l) => /shipped \d+ spooled rollout/.test(l))).toBe(true);
    } finally {
      central.close();
      // Gone before the next test, whose jobs must meet only its own nodes.
      await n.node.drain();
      nodes.splice(nodes.indexOf(n.node), 1);
    }
  }, 300_000);

  it("retries the jobs of a node whose sandbox host cannot start on a healthy node; the broken node cools down", async () => {
    // A state root under a regular file: the bwrap backend cannot create it, so no sandbox ever starts there.
    const blocker = join(root, "not-a-dir");
    writeFileSync(blocker, "");
    const broken = await startNode({ nodeId: "broken-node", capacity: 1, sandboxStateRoot: join(blocker, "state"), unhealthyAfter: 2, cooldownMs: 60_000 });
    const reader = new ClusterStatusReader(cluster.redis.url);
    const out = join(root, "out-broken");
    try {
      // The broken node alone first: it takes jobs, fails them as infra errors and pauses itself.
      const run = runRolloutJob("rollout", { cluster: cluster.redis.url, tasks: "arith:test?n=4", out }, { tasks: "arith:test?n=4" });
      let state = "";
      await until("the broken node cooling", async () => {
        state = (await reader.snapshot()).nodes.find((x) => x.nodeId === "broken-node")?.state ?? "";
        return state === "cooling";
      });
      expect(broken.lines.some((l) => /unhealthy for 60000 ms \(2 infra errors in a row\)/.test(l))).toBe(true);
      // Now a healthy node joins and runs every job, including those the broken node failed.
      await startNode({ nodeId: "good-node", capacity: 2 });
      const { results } = await run;
      expect(results.map((r) => r.status)).toEqual(["ok", "ok", "ok", "ok"]);
      const central = new SqliteStore(join(out, "records.sqlite"), { readonly: true });
      try {
        const rows = central.listLandedRollouts();
        expect(rows).toHaveLength(4);
        expect(rows.every((r) => r.nodeId === "good-node")).toBe(true);
        // The jobs the broken node held were retried: their landed attempt is a later one.
        expect(rows.filter((r) => r.attempt > 1).length).toBeGreaterThanOrEqual(2);
      } finally {
        central.close();
      }
      // Still cooling (it stopped pulling): it ran nothing while the healthy node did all the work.
      // (Heartbeats are periodic: wait for the one that counts the last completion.)
      let s = await reader.snapshot();
      await until("the healthy node's heartbeat to count its jobs", async () => {
        s = await reader.snapshot();
        return s.nodes.find((x) => x.nodeId === "good-node")?.completed === 4;
      }, 10_000);
      expect(s.nodes.find((x) => x.nodeId === "broken-node")).toMatchObject({ state: "cooling", healthy: false, completed: 0 });
      expect(s.nodes.find((x) => x.nodeId === "good-node")).toMatchObject({ state: "up", healthy: true, completed: 4 });
    } finally {
      await reader.close();
    }
  }, 300_000);

  it("fails the attempt of a node whose sandboxes' commands never return with cluster_rollout_wedged; a healthy node runs the job, the wedged one cools down", async () => {
    for (const earlier of nodes.splice(0)) await earlier.drain();
    // A sandbox host that is wedged: sandboxes are created, but no command run in them ever returns (as with
    // processes stuck in the kernel). Nothing but the node's attempt budget can end such an attempt.
    let execs = 0;
    registerSandboxBackend({
      name: "wedges-on-exec",
      summary: "test: local-unsafe sandboxes whose commands never return",
      open: async (o): Promise<SandboxBackend> => {
        const b = await sandboxBackends.get("local-unsafe").open(o);
        const wedge = async (s: Sandbox): Promise<Sandbox> => ({
          id: s.id,
          backend: "wedges-on-exec",
          workspaceDir: s.workspaceDir,
          homeDir: s.homeDir,
          paths: s.paths,
          proxyUrl: s.proxyUrl,
          exec: () => {
            execs++;
            return new Promise<ExecResult>(() => undefined);
          },
          readFile: (p, x) => s.readFile(p, x),
          writeFile: (p, d, x) => s.writeFile(p, d, x),
          listFiles: (d, x) => s.listFiles(d, x),
          serve: (n, h) => s.serve(n, h),
          destroy: () => s.destroy(),
        });
        return { name: "wedges-on-exec", unsafe: true, create: async (x) => wedge(await b.create(x)), reapOrphans: () => b.reapOrphans(), live: () => b.live(), close: () => b.close() };
      },
    });
    // Attempt budget: 15 s harness (enough for the healthy node on a loaded machine) + 30 s verifier + 30 s settle (the defaults) + 0.5 s grace.
    const wedged = await startNode({ nodeId: "wedged-node", capacity: 1, sandbox: "wedges-on-exec", wedgeGraceMs: 500, cooldownMs: 120_000 });
    const reader = new ClusterStatusReader(cluster.redis.url);
    const out = join(root, "out-wedged");
    try {
      const t0 = Date.now();
      const run = runRolloutJob("rollout", { cluster: cluster.redis.url, tasks: "arith:test?n=2", out, "timeout-s": "15" }, { tasks: "arith:test?n=2" });
      await until("the wedged node cooling", async () => (await reader.snapshot()).nodes.find((x) => x.nodeId === "wedged-node")?.state === "cooling", 120_000);
      // Not before its budget: the attempt was cut off by the wedge bound, not by anything earlier.
      expect(Date.now() - t0).toBeGreaterThan(75_000);
      expect(execs).toBeGreaterThanOrEqual(1);
      expect(wedged.lines.some((l) => /unhealthy for 120000 ms \(a rollout wedged\)/.test(l))).toBe(true);
      await startNode({ nodeId: "healthy-node", capacity: 2 });
      const { results } = await run;
      expect(results.map((r) => r.status)).toEqual(["ok", "ok"]);
      const central = new SqliteStore(join(out, "records.sqlite"), { readonly: true });
      try {
        const rows = central.listLandedRollouts();
        expect(rows).toHaveLength(2);
        expect(rows.every((r) => r.nodeId === "healthy-node")).toBe(true);
        // The wedged node's job was retried: its landed attempt is the second.
        expect(rows.map((r) => r.attempt).sort()).toEqual([1, 2]);
      } finally {
        central.close();
      }
      expect((await reader.snapshot()).nodes.find((x) => x.nodeId === "wedged-node")).toMatchObject({ state: "cooling", healthy: false, completed: 0 });
    } finally {
      await reader.close();
      await wedged.node.drain();
      nodes.splice(nodes.indexOf(wedged.node), 1);
    }
  }, 300_000);

  it("fails a job whose rollout stack does not open in time with cluster_setup_timeout, and closes a stack that opens late", async () => {
    // Only this test's node may take its job: the earlier tests' nodes go first.
    for (const earlier of nodes.splice(0)) await earlier.drain();
    // A sandbox host whose open hangs (until the test lets it go, long after the jobs gave up): the node's stack
    // open must not hold the job.
    let release!: () => void;
    const gate = new Promise<void>((done) => (release = done));
    let opened = 0;
    let closed = 0;
    registerSandboxBackend({
      name: "hangs-on-open",
      summary: "test: local-unsafe behind an open that hangs until released",
      open: async (o): Promise<SandboxBackend> => {
        opened++;
        await gate;
        const b = await sandboxBackends.get("local-unsafe").open(o);
        return { name: "hangs-on-open", unsafe: true, create: (x) => b.create(x), reapOrphans: () => b.reapOrphans(), live: () => b.live(), close: async () => {
          closed++;
          await b.close();
        } };
      },
    });
    const n = await startNode({ nodeId: "hang-node", capacity: 1, sandbox: "hangs-on-open", setupTimeoutMs: 500, unhealthyAfter: 100 });
    const out = join(root, "out-hang");
    try {
      const t0 = Date.now();
      const { results } = await runRolloutJob("rollout", { cluster: cluster.redis.url, tasks: "arith:test?n=1", out }, { tasks: "arith:test?n=1" });
      // Three attempts (the dispatcher's default), each cut off after 500 ms, with 1 s and 2 s of backoff between.
      expect(Date.now() - t0).toBeLessThan(30_000);
      expect(results).toHaveLength(1);
      expect(results[0]!.status).toBe("infra_error");
      expect(results[0]!.error).toMatch(/dropped after 3 attempt\(s\).*: cluster_setup_timeout: node hang-node: the rollout stack .* did not open within 500 ms/);
      expect(opened).toBe(3);
      // The stacks that open after their jobs gave up are closed, not leaked.
      release();
      await until("the late stacks to close", () => closed === 3, 30_000);
      expect(n.lines.join("\n")).not.toMatch(/unhealthy/);
    } finally {
      await n.node.drain();
      nodes.splice(nodes.indexOf(n.node), 1);
    }
  }, 120_000);
});
