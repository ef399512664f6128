import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { redisOptionsOf } from "../../src/cluster/connection.js";
import { ClusterDispatcher } from "../../src/cluster/dispatch.js";
import { ROLLOUT_QUEUE, type RolloutJob } from "../../src/cluster/job.js";
import type { RolloutNode } from "../../src/cluster/node.js";
import type { LlamaCppEngine } from "../../src/engine/llamacpp/engine.js";
import type { EngineService } from "../../src/engine/service/server.js";
import { buildRunContext } from "../../src/run/context.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { loadRunConfig } from "../../src/train/config.js";
import { runTraining, type RunSummary } from "../../src/train/orchestrator.js";
import { usePrivateRedis } from "../cluster/private-redis.js";
import { REPO_ROOT } from "../setup/cli.js";
import { noiseTask } from "./noise-tasks.js";
import { startNodes } from "./cluster-nodes.js";
import { rlRows } from "./run-files.js";
import { serveModel, startServedPolicy } from "./served-policy.js";
import { killChild } from "../../src/core/kill-child.js";

// `harnessrl train` with a cluster: section. A private redis-server (the project's starter), `harnessrl serve`'s
// service on a tiny preset, two rollout nodes (real bwrap sandboxes and capture proxies) and a central SQLite store.
// The first run (a `harnessrl train` process) is killed while step 2's jobs run on the nodes; the rerun resumes it.
process.env.HARNESSRL_HARNESS_CACHE ??= join(process.cwd(), ".cache", "harnesses");

const cluster = usePrivateRedis("hrl-train-cluster-");
const root = cluster.root;

/** The tiny-1m policy both services start on (v0). */
let start: string;
let engine: LlamaCppEngine;
let service: EngineService;
let url: string;
const nodes: RolloutNode[] = [];

afterAll(async () => {
  for (const n of nodes) await n.drain().catch(() => undefined);
  await service?.close();
  await engine?.close();
  delete process.env.HARNESSRL_SERVE_TOKEN;
  delete process.env.HARNESSRL_SERVE_ADMIN_TOKEN;
}, 60_000);

beforeAll(async () => {
  ({ start, engine, service, url } = await startServedPolicy(root, { token: "cluster-gen-token", adminToken: "cluster-admin-token" }));
  process.env.HARNESSRL_SERVE_TOKEN = "cluster-gen-token";
  process.env.HARNESSRL_SERVE_ADMIN_TOKEN = "cluster-admin-token";
  // One slot each: a step's four jobs need both nodes.
  nodes.push(...(await startNodes(cluster.redis.url, root)));
  await writeNativeSuite([0, 1].map((i) => noiseTask(i, "train")), join(root, "suite"));
}, 300_000);

/** A run config of the tiny policy on the cluster, written to `<root>/<name>.yaml`. */
function clusterConfig(name: string, extra: Record<string, unknown>): string {
  const config = join(root, `${name}.yaml`);
  writeFileSync(
    config,
    stringify({
      name,
      seed: 2,
      model: { dir: start },
      engine: { kind: "llamacpp-http", url },
      sampling: { temperature: 1, max_tokens: 16 },
      rollout: { sandbox: "bwrap", concurrency: 2, max_turns: 2, timeout_s: 60, memory_mb: 1024 },
      harnesses: ["chat-agent"],
      tasks: { train: `dir:${join(root, "suite")}` },
      algorithm: { lr: 0.001 },
      budget: { steps: 2, tasks_per_step: 2, samples: 2 },
      cluster: { queue: cluster.redis.url, store: `sqlite:${join(root, `${name}-central.sqlite`)}`, attempts: 2 },
      ...extra,
    }),
  );
  return config;
}

/** The run's own key (cluster-run.json): its rollout ids are `s<step>-<key>-…`. */
function runKey(runDir: string): string {
  return (JSON.parse(readFileSync(join(runDir, "cluster-run.json"), "utf8")) as { key: string }).key;
}

/** The control plane's own record store saw no rollout: every one ran on the nodes. */
function expectNoLocalRollouts(runDir: string): void {
  const local = new SqliteStore(join(runDir, "records.sqlite"), { readonly: true });
  try {
    expect(local.listSessions()).toEqual([]);
  } finally {
    local.close();
  }
}

function rolloutLines(runDir: string): RolloutResult[] {
  return readFileSync(join(runDir, "rollouts.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RolloutResult);
}

describe("train on a cluster: two rollout nodes, a served policy, a central store, the control plane killed while a step's jobs run, and a resume", () => {
  let summary: RunSummary;
  let killed: { code: number | null; signal: NodeJS.Signals | null; stderr: string };
  /** Step-2 jobs the queue had active when the control plane was killed. */
  let inFlight: string[] = [];
  let central: SqliteStore;
  const runDir = join(root, "run");
  const centralFile = join(root, "sync-central.sqlite");
  let versionsBefore = 0;

  afterAll(() => {
    central?.close();
  });

  beforeAll(async () => {
    versionsBefore = engine.loadTimings.length;
    const config = clusterConfig("sync", {});
    // The first run is `harnessrl train` in its own process, SIGKILLed as soon as a step-2 job is running on a node:
    // nothing of the control plane gets to clean up, and the nodes go on with the jobs they hold.
    const child = spawn(process.execPath, ["dist/cli/main.js", "train", "--config", config, "--run-dir", runDir], { cwd: REPO_ROOT, env: process.env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once("close", (code, signal) => resolve({ code, signal })));
    const queue = new Queue(ROLLOUT_QUEUE, { connection: redisOptionsOf(cluster.redis.url) });
    try {
      const deadline = Date.now() + 300_000;
      while (inFlight.length === 0 && child.exitCode === null && Date.now() < deadline) {
        inFlight = (await queue.getActive()).map((j) => j.id ?? "").filter((id) => /\.s2-/.test(id));
        if (inFlight.length === 0) await sleep(100);
      }
      killChild(child, "SIGKILL");
      killed = { ...(await exited), stderr };
    } finally {
      await queue.close();
    }
    summary = await runTraining(buildRunContext(loadRunConfig(config), { runDir, configPath: config }), () => undefined);
    central = new SqliteStore(centralFile, { readonly: true });
  }, 600_000);

  it("was killed while step 2's jobs ran and resumed to the planned steps, with the usual run files", () => {
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    expect(inFlight.length, killed.stderr).toBeGreaterThan(0);
    expect(summary).toMatchObject({ steps: 2, plannedSteps: 2, policyVersion: 2, timeCapped: false });
    for (const f of ["metrics.jsonl", "summary.json", "rollouts.jsonl", "state.json", "cluster-run.json"]) expect(existsSync(join(runDir, f)), f).toBe(true);
    const rl = rlRows(runDir);
    console.log(`cluster sync run (killed with ${inFlight.length} step-2 job(s) running): ${rl.map((r) => `step ${r.step}: rollouts ${Number(r["time/rollout_s"]).toFixed(1)} s, train ${Number(r["time/train_s"]).toFixed(1)} s, swap ${Number(r["time/swap_s"]).toFixed(1)} s`).join("; ")}`);
    // Each step once: step 1 committed before the kill, step 2 only by the resumed run.
    expect(rl.map((r) => r.step)).toEqual([1, 2]);
    for (const r of rl) {
      expect(r).toMatchObject({ "cluster/failed_jobs": 0, "cluster/not_landed": 0, "cluster/stale_dropped": 0, "cluster/calls_off_job_version": 0, "cluster/retried": 0 });
      expect(r["status/infra_error"]).toBeUndefined();
      expect(r["tokens/trainable"]).toBeGreaterThan(0);
    }
    // The served engine: v1 pushed by the killed run after step 1, v2 by the resumed run after step 2 (the resumed
    // run found v1 already served).
    expect(engine.loadTimings.slice(versionsBefore).map((t) => t.version)).toEqual([1, 2]);
  });

  it("trained each step on rollouts of both nodes, each landed once and run once (the resume re-added the same jobs and gathered those the nodes finished meanwhile)", async () => {
    const landed = central.listLandedRollouts();
    expect(landed).toHaveLength(8);
    expect(new Set(landed.map((r) => r.rolloutId)).size).toBe(8);
    expect(new Set(landed.map((r) => r.nodeId))).toEqual(new Set(["node-a", "node-b"]));
    // No rollout ran again after the resume: every landed attempt is the first, and the queue holds 8 completed jobs.
    expect(landed.every((r) => r.attempt === 1)).toBe(true);
    const landedIds = new Set(landed.map((r) => r.rolloutId));
    for (const id of inFlight) expect(landedIds.has(id.slice(id.indexOf(".") + 1)), id).toBe(true);
    const dispatcher = await ClusterDispatcher.open(cluster.redis.url);
    try {
      expect(await dispatcher.counts()).toMatchObject({ completed: 8, failed: 0, waiting: 0, active: 0 });
    } finally {
      await dispatcher.close();
    }
    // The run's rollout.memory_mb travelled with every job: the nodes' sandboxes got the run's limit, not their default.
    const queue = new Queue(ROLLOUT_QUEUE, { connection: redisOptionsOf(cluster.redis.url) });
    try {
      const jobs = await queue.getCompleted();
      expect(jobs.map((j) => (j.data as RolloutJob).settings.memoryMb)).toEqual(new Array<number>(8).fill(1024));
    } finally {
      await queue.close();
    }
    // rollouts.jsonl: the steps' results, each rollout once, exactly the landed ones.
    const results = rolloutLines(runDir);
    expect(results).toHaveLength(8);
    expect(new Set(results.map((r) => r.rolloutId))).toEqual(new Set(landed.map((r) => r.rolloutId)));
  });

  it("records on every call the policy version of its step (v0 in step 1, v1 in step 2)", () => {
    const key = runKey(runDir);
    for (const r of central.listLandedRollouts()) {
      const step = Number(new RegExp(`^s(\\d+)-${key}-`).exec(r.rolloutId)?.[1]);
      expect([1, 2]).toContain(step);
      const calls = central.listCalls({ rolloutId: r.rolloutId });
      expect(calls.length, r.rolloutId).toBeGreaterThan(0);
      for (const c of calls) {
        expect(c.policyVersion, r.rolloutId).toBe(step - 1);
        expect(c.engineInstance).toBe(engine.instanceId);
      }
    }
  });
});

describe("async training on two served endpoints: the staleness bound checked against the versions the records carry", () => {
  const runDir = join(root, "async-run");
  let summary: RunSummary;
  let central: SqliteStore;
  // A second `harnessrl serve` with its own engine: cluster.engines spreads the jobs over both.
  let engine2: LlamaCppEngine;
  let service2: EngineService;
  afterAll(async () => {
    central?.close();
    await service2?.close();
    await engine2?.close();
  });

  beforeAll(async () => {
    const second = await serveModel(start, join(root, "second"), { token: "cluster-gen-token", adminToken: "cluster-admin-token" });
    ({ engine: engine2, service: service2 } = second);
    const url2 = second.url;
    // max_staleness 0: step 2's jobs are added (as v0 jobs) before step 1 trains; calls a node makes before v1 is
    // pushed record v0 and make their rollout stale, calls after it record v1 although the job says v0.
    // Eight jobs a step on two one-slot nodes: four waves, so the later ones start after v1 is pushed.
    const config = clusterConfig("async", { mode: "async", max_staleness: 0, budget: { steps: 2, tasks_per_step: 2, samples: 4 }, rollout: { sandbox: "bwrap", concurrency: 2, max_turns: 1, timeout_s: 60, memory_mb: 1024 }, cluster: { queue: cluster.redis.url, store: `sqlite:${join(root, "async-central.sqlite")}`, engines: [`llamacpp-http:${url}`, `llamacpp-http:${url2}`] }, eval: { tasks: `dir:${join(root, "suite")}`, samples: 1, before: true, after: true } });
    summary = await runTraining(buildRunContext(loadRunConfig(config), { runDir, configPath: config }), () => undefined);
    central = new SqliteStore(join(root, "async-central.sqlite"), { readonly: true });
  }, 300_000);

  it("drops exactly the step-2 rollouts with a call sampled by v0, reports them, and counts calls sampled off their job's version", () => {
    expect(summary).toMatchObject({ steps: 2, policyVersion: 2 });
    const key = runKey(runDir);
    const step2 = central.listLandedRollouts().filter((r) => r.rolloutId.startsWith(`s2-${key}-`));
    expect(step2).toHaveLength(8);
    const versions = new Map(step2.map((r) => [r.rolloutId, central.listCalls({ rolloutId: r.rolloutId }).map((c) => c.policyVersion)]));
    const stale = [...versions].filter(([, vs]) => vs.some((v) => v === 0)).map(([id]) => id);
    const offJob = [...versions.values()].flat().filter((v) => v !== 0).length;
    const [row1, row2] = rlRows(runDir);
    expect(row1).toMatchObject({ step: 1, "cluster/stale_dropped": 0, "cluster/calls_off_job_version": 0 });
    expect(row2).toMatchObject({ step: 2, "cluster/stale_dropped": stale.length, "cluster/calls_off_job_version": offJob });
    const lines = rolloutLines(runDir).filter((r) => r.rolloutId.startsWith(`s2-${key}-`));
    expect(lines.filter((r) => r.status === "infra_error").map((r) => r.rolloutId).sort()).toEqual(stale.sort());
    for (const r of lines.filter((x) => stale.includes(x.rolloutId))) expect(r.error).toMatch(/^stale: a call was sampled by policy v0, 1 versions behind v1 \(max_staleness 0\)/);
    console.log(`async step 2: ${stale.length} of 8 rollouts stale, ${offJob} calls sampled by v1 under v0 jobs`);
    // Both endpoints sampled, and both were pushed each new version (the second started at v0 like the run).
    const instances = new Set(central.listLandedRollouts().flatMap((r) => central.listCalls({ rolloutId: r.rolloutId }).map((c) => c.engineInstance)));
    expect(instances).toEqual(new Set([engine.instanceId, engine2.instanceId]));
    expect(engine2.loadTimings.map((t) => t.version)).toEqual([0, 1, 2]);
    expect(engine2.policyVersion).toBe(2);
    // Every call of a kept rollout is within the bound.
    for (const r of lines.filter((x) => x.status !== "infra_error")) expect(versions.get(r.rolloutId)?.every((v) => v === 1)).toBe(true);
  });

  it("evaluates before and after on the nodes: the evaluation jobs sample the policy version they evaluate, none runs on the control plane", () => {
    const key = runKey(runDir);
    expect(summary.before?.rollouts).toBe(2);
    expect(summary.after?.rollouts).toBe(2);
    for (const [label, version] of [["eval-before", 0], ["eval-after", 2]] as const) {
      const rows = central.listLandedRollouts().filter((r) => r.rolloutId.startsWith(`${label}-${key}-`));
      expect(rows, label).toHaveLength(2);
      for (const r of rows) {
        expect(["node-a", "node-b"]).toContain(r.nodeId);
        const calls = central.listCalls({ rolloutId: r.rolloutId });
        expect(calls.length).toBeGreaterThan(0);
        for (const c of calls) expect(c.policyVersion, `${label} ${r.rolloutId}`).toBe(version);
      }
    }
    // The control plane's own record store saw no rollout at all: training and evaluation ran on the nodes.
    expectNoLocalRollouts(runDir);
  });
});

describe("HarnessBandit with a probe harness on the cluster: the probe rollouts are jobs of their step, sketched, never trained", () => {
  const runDir = join(root, "probe-run");
  let summary: RunSummary;
  let central: SqliteStore;
  afterAll(() => {
    central?.close();
  });

  beforeAll(async () => {
    const config = clusterConfig("probe", {
      harnesses: ["chat-agent", "resp-agent"],
      mix: "scheduled",
      scheduler: { name: "harness-bandit", sketch_dim: 128, probe_harnesses: ["claw-agent"], probe_tasks: 1, probe_samples: 2 },
      budget: { steps: 1, tasks_per_step: 2, samples: 2 },
      rollout: { sandbox: "bwrap", concurrency: 2, max_turns: 1, timeout_s: 60, memory_mb: 1024 },
      cluster: { queue: cluster.redis.url, store: `sqlite:${join(root, "probe-central.sqlite")}`, attempts: 2 },
    });
    summary = await runTraining(buildRunContext(loadRunConfig(config), { runDir, configPath: config }), () => undefined);
    central = new SqliteStore(join(root, "probe-central.sqlite"), { readonly: true });
  }, 300_000);

  it("runs the step's own and its probe rollouts on the nodes, lands both, and trains only the step's own", () => {
    expect(summary).toMatchObject({ steps: 1, policyVersion: 1 });
    const key = runKey(runDir);
    const landed = central.listLandedRollouts();
    const probeRows = landed.filter((r) => r.rolloutId.startsWith(`s1-${key}-p-`));
    const own = landed.filter((r) => !r.rolloutId.startsWith(`s1-${key}-p-`));
    expect(probeRows.map((r) => r.result["harness"])).toEqual(["claw-agent", "claw-agent"]);
    expect(own).toHaveLength(4);
    for (const r of [...probeRows, ...own]) expect(["node-a", "node-b"]).toContain(r.nodeId);
    // Sampled by the step's policy version, like the step's own rollouts.
    for (const r of probeRows) for (const c of central.listCalls({ rolloutId: r.rolloutId })) expect(c.policyVersion).toBe(0);
    const trained = rolloutLines(runDir);
    expect(trained).toHaveLength(4);
    expect(trained.filter((r) => r.harness === "claw-agent")).toEqual([]);
    const probes = readFileSync(join(runDir, "probes.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RolloutResult);
    expect(new Set(probes.map((r) => r.rolloutId))).toEqual(new Set(probeRows.map((r) => r.rolloutId)));
    // The control plane ran none of them.
    expectNoLocalRollouts(runDir);
  });

  it("hands the probe's sketch, read from the central store, to the scheduler", () => {
    const [row] = rlRows(runDir);
    expect(row).toMatchObject({ step: 1, "probe/rollouts/claw-agent": 2, "probe/skipped/claw-agent": 0, "bandit/probe_visits/claw-agent": 1, "bandit/probe_peers": 1 });
    expect(row?.["probe/tokens/claw-agent"] as number).toBeGreaterThan(0);
    expect(row?.["probe/grad_norm/claw-agent"] as number).toBeGreaterThan(0);
    expect(row?.["sched/visits/claw-agent"]).toBeUndefined();
  });
});
