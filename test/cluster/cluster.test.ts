import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Client as PgClient } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalPostgres } from "../../scripts/local-postgres.mjs";
import { registerBuiltins } from "../../src/builtins.js";
import { netnsAvailable } from "../../src/cluster/netns.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { loadSuite } from "../../src/tasks/registry.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import { runCli } from "../setup/cli.js";
import { landed, localSessions, startNetnsCluster, type NetnsCluster } from "./netns-cluster.js";
import { killChild } from "../../src/core/kill-child.js";

// Three rollout nodes, each in its own network namespace, pulling from Redis in the control plane's namespace; the
// `rollout` command dispatches from there. Real sandboxes, real capture proxies, the oracle policy.
process.env.HARNESSRL_HARNESS_CACHE ??= join(process.cwd(), ".cache", "harnesses");
// Nodes and commands inherit it: the generation token of the `harnessrl serve` the last scenario starts.
process.env.HARNESSRL_SERVE_TOKEN = "netns-serve-token";

const root = mkdtempSync(join(tmpdir(), "hrl-cluster-"));
let cluster: NetnsCluster | undefined;

function parseJson(stdout: string): { counts: Record<string, number>; results: RolloutResult[] } {
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as { counts: Record<string, number>; results: RolloutResult[] };
}

describe.skipIf(!netnsAvailable())("a cluster of three namespace nodes", () => {
  beforeAll(async () => {
    registerBuiltins();
    cluster = await startNetnsCluster(root, 3);
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it("runs a rollout command's jobs across the nodes; every rollout lands once, GRPO groups whole", async () => {
    const out = join(root, "out-basic");
    const r = await cluster!.cli(["rollout", "--cluster", cluster!.url, "--tasks", "arith:test?n=4", "--samples", "3", "--out", out, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const { counts, results } = parseJson(r.stdout);
    expect(results).toHaveLength(12);
    expect(counts.ok).toBe(12);
    const rows = landed(join(out, "records.sqlite"));
    expect(new Set(rows.map((x) => x.rolloutId)).size).toBe(12);
    expect(rows).toHaveLength(12);
    // More than one node did work (the queue spreads 12 jobs over 3 × 2 slots).
    expect(new Set(rows.map((x) => x.nodeId)).size).toBeGreaterThan(1);
    // Each (task) group of 3 samples is complete in the gathered results, in plan order.
    for (let t = 0; t < 4; t++) expect(results.slice(3 * t, 3 * t + 3).map((x) => x.sample)).toEqual([0, 1, 2]);
  }, 300_000);

  it("retries the job of a node killed mid-rollout on another node; the dead attempt's records never land", async () => {
    const out = join(root, "out-kill");
    const run = cluster!.cli(["rollout", "--cluster", cluster!.url, "--tasks", "arith:test?n=6", "--out", out, "--json"]);
    // Kill node 0 as soon as it holds a rollout that has records locally but has not landed.
    const victim = cluster!.nodes[0]!;
    let killedRollout: string | undefined;
    let deadSessions: string[] = [];
    const deadline = Date.now() + 120_000;
    // The node's local store still holds the earlier tests' rollouts (same ids in other runs): only sessions this run
    // created count.
    const earlier = new Set([...localSessions(victim.dir).values()].flat());
    while (!killedRollout && Date.now() < deadline) {
      const pending = [...localSessions(victim.dir)]
        .map(([id, sessions]): [string, string[]] => [id, sessions.filter((s) => !earlier.has(s))])
        .filter(([id, sessions]) => id.startsWith("rollout-") && sessions.length > 0);
      if (pending.length > 0) {
        // Freeze the node before deciding: a rollout seen unlanded could otherwise land between the check and the kill.
        killChild(victim.proc, "SIGSTOP");
        const landedIds = new Set(landed(join(out, "records.sqlite")).map((x) => x.rolloutId));
        const hit = pending.find(([id]) => !landedIds.has(id));
        if (hit) [killedRollout, deadSessions] = hit;
        else killChild(victim.proc, "SIGCONT");
      }
      if (!killedRollout) await sleep(50);
    }
    expect(killedRollout, "node 0 never ran a rollout").toBeDefined();
    await cluster!.kill(0, "SIGKILL");
    const r = await run;
    expect(r.code, r.stderr).toBe(0);
    const { counts, results } = parseJson(r.stdout);
    expect(counts.ok, JSON.stringify(results.filter((x) => x.status !== "ok").map((x) => [x.rolloutId, x.status, x.error]))).toBe(6);
    const rows = landed(join(out, "records.sqlite"));
    expect(rows).toHaveLength(6);
    const again = rows.find((x) => x.rolloutId === killedRollout)!;
    expect(again.nodeId).not.toBe("node0");
    // The dead attempt's sessions are nowhere in the central store.
    const { SqliteStore } = await import("../../src/store/sqlite.js");
    const central = new SqliteStore(join(out, "records.sqlite"), { readonly: true });
    try {
      const ids = new Set(central.listSessions({ rolloutId: killedRollout! }).map((s) => s.sessionId));
      expect(ids.size).toBeGreaterThan(0);
      for (const s of deadSessions) expect(ids.has(s)).toBe(false);
    } finally {
      central.close();
    }
    cluster!.startNode(0);
  }, 300_000);

  it("survives a Redis restart mid-run: every rollout completes and lands once", async () => {
    const out = join(root, "out-redis");
    const run = cluster!.cli(["rollout", "--cluster", cluster!.url, "--tasks", "arith:test?n=6", "--out", out, "--json"]);
    // Restart once the first rollout has landed (jobs are then queued, active and finished at once).
    const deadline = Date.now() + 120_000;
    while (landed(join(out, "records.sqlite")).length === 0 && Date.now() < deadline) await sleep(100);
    expect(landed(join(out, "records.sqlite")).length).toBeGreaterThan(0);
    await cluster!.redis.restart();
    const r = await run;
    expect(r.code, r.stderr).toBe(0);
    const { counts, results } = parseJson(r.stdout);
    expect(counts.ok, JSON.stringify(results.filter((x) => x.status !== "ok").map((x) => [x.rolloutId, x.status, x.error]))).toBe(6);
    const rows = landed(join(out, "records.sqlite"));
    expect(rows).toHaveLength(6);
    expect(new Set(rows.map((x) => x.rolloutId)).size).toBe(6);
  }, 300_000);

  it("resumes after the control plane is killed: the rerun gathers the same jobs, nothing lost or counted twice", async () => {
    const out = join(root, "out-cp");
    const args = ["rollout", "--cluster", cluster!.url, "--tasks", "arith:test?n=6", "--out", out, "--json"];
    const first = cluster!.cli(args, 240_000);
    const deadline = Date.now() + 120_000;
    while (landed(join(out, "records.sqlite")).length === 0 && Date.now() < deadline) await sleep(100);
    expect(landed(join(out, "records.sqlite")).length).toBeGreaterThan(0);
    // nsenter execs node: killing the child kills the control plane itself.
    cluster!.killCli();
    expect((await first).code).not.toBe(0);
    const r = await cluster!.cli(args);
    expect(r.code, r.stderr).toBe(0);
    const { counts, results } = parseJson(r.stdout);
    expect(results).toHaveLength(6);
    expect(counts.ok).toBe(6);
    const rows = landed(join(out, "records.sqlite"));
    expect(rows).toHaveLength(6);
    expect(rows.every((x) => x.attempt === 1)).toBe(true);
    expect(readFileSync(join(out, "rollouts.jsonl"), "utf8").trim().split("\n")).toHaveLength(6);
  }, 300_000);

  it("moves a poison job (fails on every node) to the failed set with its reason; the others complete", async () => {
    const suiteDir = join(root, "poison-suite");
    const tasks = (await loadSuite("arith:test?n=2")).tasks.map((t) => ({ ...t }));
    const poison = { ...tasks[0]!, id: "poison-0", verifier: { ...tasks[0]!.verifier, command: ["sh", "-c", "echo verifier machinery broken >&2; exit 3"] } };
    await writeNativeSuite([...tasks, poison], suiteDir);
    const out = join(root, "out-poison");
    const r = await cluster!.cli(["rollout", "--cluster", cluster!.url, "--tasks", `dir:${suiteDir}`, "--out", out, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const { results } = parseJson(r.stdout);
    const p = results.find((x) => x.taskId === "poison-0")!;
    expect(p.status).toBe("infra_error");
    expect(p.error).toMatch(/cluster_job_failed: dropped after 3 attempt\(s\).*verifier failed/);
    expect(results.filter((x) => x.status === "ok")).toHaveLength(2);
    expect(r.stderr).toMatch(/1 rollout job\(s\) failed on every attempt and were dropped/);
    expect(landed(join(out, "records.sqlite")).map((x) => x.rolloutId)).not.toContain(p.rolloutId);
    expect(readFileSync(join(out, "rollouts.jsonl"), "utf8").trim().split("\n")).toHaveLength(3);
  }, 300_000);

  it("samples from a shared `harnessrl serve` and lands records in Postgres, both in the control plane's namespace", async () => {
    const topo = cluster!.topo;
    const pg = await startLocalPostgres({ netns: topo.cp, listen: topo.cpAddress });
    try {
      const model = join(root, "serve-model");
      const init = await runCli(["model", "init", "--preset", "tiny-1m", "--seed", "5", "--out", model]);
      expect(init.code, init.stderr).toBe(0);
      const serve = await cluster!.service(["serve", "--model-dir", model, "--host", topo.cpAddress, "--port", "8500", "--sequences", "6", "--cache", join(root, "serve-cache")], { HARNESSRL_SERVE_ADMIN_TOKEN: "netns-admin" }, /engine spec for nodes/);
      const instance = /^harnessrl serve: (\S+),/m.exec(serve.output())?.[1];
      expect(instance).toBeDefined();
      const out = join(root, "out-serve-pg");
      const engine = `llamacpp-http:http://${topo.cpAddress}:8500`;
      const r = await cluster!.cli(["rollout", "--cluster", cluster!.url, "--store", pg.url, "--engine", engine, "--model-dir", model, "--tasks", "arith:test?n=3", "--samples", "2", "--max-tokens", "24", "--max-turns", "2", "--out", out, "--json"]);
      expect(r.code, r.stderr).toBe(0);
      const { results } = parseJson(r.stdout);
      expect(results).toHaveLength(6);
      // A random tiny model fails the tasks; what matters is that every rollout ran (no infra error) and landed.
      expect(results.filter((x) => x.status === "infra_error").map((x) => x.error)).toEqual([]);
      // Read back over the server's unix socket: its TCP address exists only inside the namespaces.
      const db = new PgClient({ host: pg.socketDir, port: pg.port, user: "postgres", database: pg.database });
      await db.connect();
      try {
        const rows = (await db.query<{ rollout_id: string; node_id: string; attempt: number }>("SELECT rollout_id, node_id, attempt FROM rollouts")).rows;
        expect(rows.map((x) => x.rollout_id).sort()).toEqual(results.map((x) => x.rolloutId).sort());
        expect(new Set(rows.map((x) => x.node_id)).size).toBeGreaterThan(1);
        // Every call was sampled by the one served engine, and names it.
        const calls = (await db.query<{ rollout_id: string; instance: string | null }>("SELECT rollout_id, meta_json::json->>'engineInstance' AS instance FROM calls")).rows;
        expect(new Set(calls.map((c) => c.rollout_id))).toEqual(new Set(rows.map((x) => x.rollout_id)));
        expect(new Set(calls.map((c) => c.instance))).toEqual(new Set([instance]));
      } finally {
        await db.end();
      }
    } finally {
      await pg.stop();
    }
  }, 420_000);
});
