/**
 * `npm run bench:cluster`: the same rollouts (oracle policy, chat-agent harness, bwrap sandboxes) side by side in one
 * run: the single-machine runner, then 1, 2 and 3 rollout nodes (`harnessrl node`, separate processes) pulling from a
 * private Redis, shipping to a central SQLite store. Reports rollouts/s and the per-rollout overhead the cluster adds:
 *   - pickup: job added → a node starts it, for jobs that found a free slot (the first wave, after a warm-up wave that
 *     opened every node's stack: a node's first job blocks its event loop for its setup and delays its other slots);
 *   - refill: a slot freed on a node (one of its jobs finished) → the node starts its next job, in steady state;
 *   - node: the node's time on the job outside the rollout itself (validation, stack, bundle, lock check, ship);
 *   - ship: of that, landing the bundle in the central store;
 *   - gather: the job finished on the node → the control plane knows;
 *   - node setup (apart, max): a node's first job per engine opens its rollout stack, once per node.
 * overhead = refill + node + gather (p50s): what each rollout costs once the cluster runs (pickup is the first wave's). All nodes share this machine's cores, so more nodes cannot be faster
 * here: the throughput columns show the cost of the machinery, not a cluster's scaling.
 * Options: --tasks N (default 8), --capacity N per node (default 2), --out FILE (default docs/bench/cluster.json).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { registerBuiltins } from "../builtins.js";
import { ClusterDispatcher, type GatheredRollout } from "../cluster/dispatch.js";
import { jobsOfPlan, runIdOf } from "../cluster/plan.js";
import { startRedisServer } from "../cluster/redis-server.js";
import { InfraError } from "../core/errors.js";
import { runRollouts, type RolloutPlan } from "../rollout/runner.js";
import { RolloutStack } from "../rollout/stack.js";
import { openStore } from "../store/registry.js";
import { loadSuite } from "../tasks/registry.js";
import { latencySummary } from "./stats.js";
import { killChild } from "../core/kill-child.js";

const { values } = parseArgs({ options: { tasks: { type: "string", default: "8" }, capacity: { type: "string", default: "2" }, out: { type: "string", default: "docs/bench/cluster.json" } } });
const nTasks = Number(values.tasks);
const capacity = Number(values.capacity);
const CLI = join(dirname(fileURLToPath(import.meta.url)), "..", "cli", "main.js");
const round = (x: number): number => Math.round(x * 10) / 10;

interface Row {
  variant: string;
  rollouts: number;
  ok: number;
  wallS: number;
  rolloutsPerS: number;
  rolloutMsP50: number;
  pickupMsP50?: number;
  refillMsP50?: number;
  nodeMsP50?: number;
  shipMsP50?: number;
  gatherMsP50?: number;
  nodeSetupMsMax?: number;
  overheadMsP50?: number;
}

async function single(plan: RolloutPlan, dir: string): Promise<Row> {
  const stack = await RolloutStack.open({ engine: "oracle", store: `sqlite:${join(dir, "single.sqlite")}`, sandbox: "bwrap", sampling: { temperature: 1, maxTokens: 256 }, sandboxPool: capacity });
  try {
    const t0 = performance.now();
    const results = await runRollouts(stack, plan, { concurrency: capacity, settings: { maxTurns: 8, maxTokens: 256, harnessTimeoutMs: 120_000 } });
    const wallS = (performance.now() - t0) / 1000;
    return { variant: `single machine (concurrency ${capacity})`, rollouts: results.length, ok: results.filter((r) => r.status === "ok").length, wallS: round(wallS), rolloutsPerS: Math.round((results.length / wallS) * 1000) / 1000, rolloutMsP50: round(latencySummary(results.map((r) => r.timings.endedAt - r.timings.startedAt)).p50) };
  } finally {
    await stack.close();
  }
}

/**
 * Runs warm-up jobs (not measured) until every node has run one, so that no measured job pays a node's one-off stack
 * setup or waits behind it; bounded to three waves of two jobs per slot.
 */
async function warmUp(dispatcher: ClusterDispatcher, plan: RolloutPlan, jobOptions: Parameters<typeof jobsOfPlan>[1], nodes: number): Promise<void> {
  const warm = new Set<string>();
  for (let wave = 0; wave < 3 && warm.size < nodes; wave++) {
    const tasks = Array.from({ length: 2 * nodes * capacity }, (_, i) => plan.tasks[i % plan.tasks.length]!);
    const jobs = jobsOfPlan({ ...plan, tasks, samples: 1, idPrefix: `${plan.idPrefix}-warm${wave}` }, jobOptions).map((j, i) => ({ ...j, rolloutId: `${j.rolloutId}-${i}` }));
    for (const g of await dispatcher.run(jobs, { pollMs: 1000, timeoutMs: 600_000 })) if (g.outcome === "completed") warm.add(g.ret.nodeId);
  }
  if (warm.size < nodes) throw new InfraError("bench_check_failed", `warm-up: only ${warm.size} of ${nodes} nodes ran a job`);
}

/**
 * Steady-state refill latency per node: its i-th job (by start) took the slot the (i − capacity)-th finish freed, so
 * refill = start(i) − that finish. Jobs of the first wave (a slot free from the start) have none.
 */
function refills(done: Extract<GatheredRollout, { outcome: "completed" }>[]): number[] {
  const byNode = new Map<string, Extract<GatheredRollout, { outcome: "completed" }>[]>();
  for (const g of done) byNode.set(g.ret.nodeId, [...(byNode.get(g.ret.nodeId) ?? []), g]);
  const out: number[] = [];
  for (const jobs of byNode.values()) {
    const starts = jobs.map((g) => g.times.processedOn).sort((a, b) => a - b);
    const finishes = jobs.map((g) => g.times.finishedOn).sort((a, b) => a - b);
    for (let i = capacity; i < starts.length; i++) out.push(Math.max(0, starts[i]! - finishes[i - capacity]!));
  }
  return out;
}

async function cluster(plan: RolloutPlan, dir: string, url: string, nodes: number): Promise<Row> {
  const store = `sqlite:${join(dir, `central-${nodes}.sqlite`)}`;
  openStore(store).close();
  const procs: ChildProcess[] = [];
  for (let i = 0; i < nodes; i++) {
    procs.push(spawn(process.execPath, [CLI, "node", "--node-id", `bench${nodes}-${i}`, "--capacity", String(capacity), "--dir", join(dir, `node${nodes}-${i}`), "--heartbeat-ms", "1000"], { env: { ...process.env, HARNESSRL_CLUSTER: url }, stdio: ["ignore", "ignore", "inherit"] }));
  }
  const dispatcher = await ClusterDispatcher.open(url);
  try {
    // Every node up (heartbeat seen) before the clock starts; bounded.
    for (let i = 0; i < 600 && (await dispatcher.nodes()).filter((n) => n.nodeId.startsWith(`bench${nodes}-`)).length < nodes; i++) await sleep(100);
    const jobOptions = { runId: runIdOf(join(dir, `run-${nodes}`)), engine: "oracle", store, policyVersion: null, sampling: { temperature: 1, maxTokens: 256 }, settings: { maxTurns: 8, maxTokens: 256, harnessTimeoutMs: 120_000 } };
    await warmUp(dispatcher, plan, jobOptions, nodes);
    const jobs = jobsOfPlan(plan, jobOptions);
    const t0 = performance.now();
    const gathered = await dispatcher.run(jobs, { pollMs: 1000, timeoutMs: 1800_000 });
    const wallS = (performance.now() - t0) / 1000;
    const done = gathered.filter((g): g is Extract<GatheredRollout, { outcome: "completed" }> => g.outcome === "completed");
    if (done.length !== jobs.length) throw new InfraError("bench_check_failed", `${jobs.length - done.length} of ${jobs.length} jobs failed: ${gathered.find((g) => g.outcome === "failed")?.outcome === "failed" ? JSON.stringify(gathered.find((g) => g.outcome === "failed")) : ""}`);
    const slots = nodes * capacity;
    const firstWave = [...done].sort((a, b) => a.times.processedOn - b.times.processedOn).slice(0, slots);
    const p50 = (xs: number[]): number => round(latencySummary(xs).p50);
    const pickup = p50(firstWave.map((g) => g.times.processedOn - g.times.addedAt));
    const refill = p50(refills(done));
    // A node's first job per engine opens its stack (seconds, once per node): reported apart, not as per-rollout cost.
    const node = p50(done.map((g) => (g.ret.timing ? g.ret.timing.jobMs - g.ret.timing.rolloutMs - g.ret.timing.setupMs : NaN)));
    const setupMax = round(Math.max(...done.map((g) => g.ret.timing?.setupMs ?? 0)));
    const ship = p50(done.map((g) => g.ret.timing?.shipMs ?? NaN));
    const gather = p50(done.map((g) => g.times.gatheredAt - g.times.finishedOn));
    return {
      variant: `${nodes} node${nodes > 1 ? "s" : ""} × capacity ${capacity}`,
      rollouts: done.length,
      ok: done.filter((g) => g.ret.result.status === "ok").length,
      wallS: round(wallS),
      rolloutsPerS: Math.round((done.length / wallS) * 1000) / 1000,
      rolloutMsP50: p50(done.map((g) => g.ret.timing?.rolloutMs ?? NaN)),
      pickupMsP50: pickup,
      refillMsP50: refill,
      nodeMsP50: node,
      shipMsP50: ship,
      gatherMsP50: gather,
      nodeSetupMsMax: setupMax,
      overheadMsP50: round(refill + node + gather),
    };
  } finally {
    await dispatcher.close();
    for (const p of procs) killChild(p, "SIGTERM");
    for (const p of procs) await Promise.race([new Promise((r) => p.once("exit", r)), sleep(30_000)]);
  }
}

async function main(): Promise<void> {
  registerBuiltins();
  process.env.HARNESSRL_HARNESS_CACHE ??= resolve(".cache", "harnesses");
  const dir = mkdtempSync(join(tmpdir(), "hrl-bench-cluster-"));
  const redis = await startRedisServer({ dir: join(dir, "redis") });
  try {
    const suite = await loadSuite(`arith:test?n=${nTasks}`);
    const rows: Row[] = [];
    for (const variant of ["single", 1, 2, 3] as const) {
      // Each variant gets its own rollout ids (a fresh plan prefix), so no job is a repeat of another variant's.
      const plan: RolloutPlan = { tasks: suite.tasks, harnesses: ["chat-agent"], samples: 1, idPrefix: `bench-${variant}` };
      const row = variant === "single" ? await single(plan, dir) : await cluster(plan, dir, redis.url, variant);
      rows.push(row);
      process.stderr.write(`${JSON.stringify(row)}\n`);
    }
    const out = resolve(values.out);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify({ date: new Date().toISOString(), tasks: nTasks, capacity, rows }, null, 2)}\n`);
    console.log(["| variant | rollouts (ok) | wall s | rollouts/s | rollout p50 ms | pickup | refill | node | ship | gather | overhead p50 ms | node setup max ms |", "|---|---|---|---|---|---|---|---|---|---|---|---|", ...rows.map((r) => `| ${r.variant} | ${r.rollouts} (${r.ok}) | ${r.wallS} | ${r.rolloutsPerS} | ${r.rolloutMsP50} | ${r.pickupMsP50 ?? "–"} | ${r.refillMsP50 ?? "–"} | ${r.nodeMsP50 ?? "–"} | ${r.shipMsP50 ?? "–"} | ${r.gatherMsP50 ?? "–"} | ${r.overheadMsP50 ?? "–"} | ${r.nodeSetupMsMax ?? "–"} |`)].join("\n"));
  } finally {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
