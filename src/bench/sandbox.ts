/**
 * `npm run bench:sandbox`: sandbox start → first exec latency (p50/p99), side by side in one interleaved run:
 *   - a plain unsandboxed `spawn("true")`;
 *   - bwrap cold (no pool: bwrap + the exec agent start inside create) and bwrap pooled (a warm sandbox from the pool:
 *     create relabels it, sets its limits and seeds its workspace), each without and with the proxy bridge;
 *   - bwrap cold with its launch chain spawned by this process itself instead of the launcher process
 *     (src/sandbox/launcher): with --ballast-mib this process holds that much memory, as a control plane holding the
 *     llama.cpp engine does, and a fork costs in proportion to it;
 *   - exec of `true` in a sandbox that is already running (without and with the proxy), and local-unsafe.
 * Every iteration runs the variants in a new (seeded) random order. Then the most concurrent bwrap sandboxes held on this machine (ramped up to a cap, each holding a sleeping process,
 * created through the default warm pool). Writes docs/bench/sandbox.json.
 *
 * CPU time (this process and all descendants, via a cgroup v1 cpuacct group) is reported next to wall-clock latency:
 * on a shared, loaded machine the wall-clock numbers mostly measure waiting for a core, the CPU time does not. For the
 * pooled variants, the CPU of the background refill that replaces the sandbox taken is reported separately: it is off
 * the start's critical path, but it is what a start costs the machine.
 *
 * Besides wall-clock and CPU time, each variant reports how long this process's event loop was busy per start
 * (`performance.eventLoopUtilization`): time in which a control plane's proxy and engine could not run.
 *
 * Options: --ballast-mib N (default 0), --iterations N (default 40), --cap N (default 512), --hold-with-proxy (held sandboxes also use the proxy),
 * --min-free-mib N (stop ramping below this much available memory, default 3072), --pool N (size of the pooled
 * backend's pool, default 2), --out FILE.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { cpus, loadavg, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { mulberry32 } from "../core/random.js";
import { BwrapBackend } from "../sandbox/bwrap/backend.js";
import { LocalUnsafeBackend } from "../sandbox/local/backend.js";
import type { ExecResult, Sandbox, SandboxBackend, SandboxCreateOptions } from "../sandbox/types.js";
import { latencySummary, type LatencySummary } from "./stats.js";
import { InfraError } from "../core/errors.js";

const { values } = parseArgs({
  options: {
    iterations: { type: "string", default: "40" },
    "ballast-mib": { type: "string", default: "0" },
    cap: { type: "string", default: "512" },
    "hold-with-proxy": { type: "boolean", default: false },
    "min-free-mib": { type: "string", default: "3072" },
    pool: { type: "string", default: "2" },
    out: { type: "string", default: "docs/bench/sandbox.json" },
  },
});
const iterations = Number(values.iterations);
const cap = Number(values.cap);
const minFreeBytes = Number(values["min-free-mib"]) * 1024 * 1024;
const poolSize = Number(values.pool);
/** Touched memory held for the whole run (a fork copies the page tables of what the forking process maps). */
const ballast = Array.from({ length: Number(values["ballast-mib"]) }, () => Buffer.alloc(1024 * 1024, 1));
const LIMITS = { memoryBytes: 256 * 1024 * 1024, maxPids: 128, wallClockMs: 3_600_000 };

type Summary = LatencySummary;

const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;

function summary(samples: number[]): Summary {
  const s = latencySummary(samples);
  return { n: s.n, p50: round(s.p50), p99: round(s.p99), mean: round(s.mean) };
}

function memAvailable(): number {
  const m = readFileSync("/proc/meminfo", "utf8").match(/^MemAvailable:\s+(\d+) kB$/m);
  return m?.[1] ? Number(m[1]) * 1024 : NaN;
}

function plainSpawn(): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolveP, reject) => {
    const child = spawn("true", [], { stdio: "ignore" });
    child.on("error", reject);
    child.on("close", () => resolveP(performance.now() - t0));
  });
}

/**
 * CPU time of this process and every descendant (sandboxed or not), in ms: the bench moves itself into its own cgroup
 * v1 cpuacct group, which its children inherit. Undefined where there is no cpuacct hierarchy to use.
 */
function openCpuMeter(): (() => number) | undefined {
  const dir = `/sys/fs/cgroup/cpuacct/harnessrl-bench-${process.pid}`;
  try {
    mkdirSync(dir);
    writeFileSync(join(dir, "cgroup.procs"), String(process.pid));
  } catch {
    return undefined;
  }
  process.on("exit", () => {
    try {
      writeFileSync("/sys/fs/cgroup/cpuacct/cgroup.procs", String(process.pid));
      rmdirSync(dir);
    } catch {
      // left for the operator; harmless
    }
  });
  return () => Number(readFileSync(join(dir, "cpuacct.usage"), "utf8")) / 1e6;
}
const cpuMeter = openCpuMeter();
const cpuMsSoFar = (): number => cpuMeter?.() ?? NaN;

interface StartVariant {
  name: string;
  backend: SandboxBackend;
  options: SandboxCreateOptions;
  /** The backend's warm pool, refilled (and its CPU measured) after every start. */
  pool: BwrapBackend | undefined;
  total: number[];
  create: number[];
  exec: number[];
  /** CPU time (ours + all descendants') from create to the end of the first exec. */
  cpuMs: number;
  /** CPU time of refilling the pool after the sandbox was taken (pooled variants). */
  refillCpuMs: number;
  /** This process's event loop, busy (not waiting for I/O), from create to the end of the first exec. */
  loopBusyMs: number;
}

function startVariant(name: string, backend: SandboxBackend, options: SandboxCreateOptions, pool?: BwrapBackend): StartVariant {
  return { name, backend, options, pool, total: [], create: [], exec: [], cpuMs: 0, refillCpuMs: 0, loopBusyMs: 0 };
}

async function startToFirstExec(v: StartVariant): Promise<void> {
  if (v.pool) await v.pool.poolSettled(); // measure the warm case: a full pool
  const c0 = cpuMsSoFar();
  const loop0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  const s = await v.backend.create(v.options);
  const t1 = performance.now();
  const r = await s.exec(["true"]);
  const t2 = performance.now();
  v.cpuMs += cpuMsSoFar() - c0;
  v.loopBusyMs += performance.eventLoopUtilization(loop0).active;
  if (r.exitCode !== 0) throw new InfraError("bench_check_failed", `${v.name}: first exec failed: ${r.stderr}`);
  v.create.push(t1 - t0);
  v.exec.push(t2 - t1);
  v.total.push(t2 - t0);
  await s.destroy();
  if (v.pool) {
    const c1 = cpuMsSoFar();
    await v.pool.poolSettled();
    v.refillCpuMs += cpuMsSoFar() - c1;
  }
}

interface ExecVariant {
  name: string;
  sandbox: Sandbox;
  samples: number[];
  cpuMs: number;
}

async function execInRunning(v: ExecVariant): Promise<void> {
  const c0 = cpuMsSoFar();
  const t0 = performance.now();
  const r = await v.sandbox.exec(["true"]);
  v.samples.push(performance.now() - t0);
  v.cpuMs += cpuMsSoFar() - c0;
  if (r.exitCode !== 0) throw new InfraError("bench_check_failed", `${v.name}: exec failed: ${r.stderr}`);
}

async function waitForFile(s: Sandbox, name: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (existsSync(join(s.workspaceDir, name))) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}

interface RampResult {
  cap: number;
  heldWithProxyBridge: boolean;
  poolSize: number;
  held: number;
  stillRunningAtPeak: number;
  stopReason: string;
  rampSeconds: number;
  hostMemoryUsedMiB: number;
  perSandboxMemoryKiB: number | null;
  teardownSeconds: number;
  leftoverSandboxes: number;
}

/** Holds sandboxes, each with a sleeping process, until the cap, a failure, or memory runs low. */
async function ramp(backend: BwrapBackend, network: SandboxCreateOptions["network"]): Promise<RampResult> {
  const held: { sandbox: Sandbox; run: Promise<ExecResult> }[] = [];
  const memBefore = memAvailable();
  const rampStart = performance.now();
  let stopReason = `reached the cap of ${cap}`;
  while (held.length < cap) {
    if (memAvailable() < minFreeBytes) {
      stopReason = `available memory fell below ${values["min-free-mib"]} MiB`;
      break;
    }
    try {
      const sandbox = await backend.create({ limits: LIMITS, ...(values["hold-with-proxy"] ? { network } : {}) });
      const run = sandbox.exec(["sh", "-c", "echo up > up; exec sleep 3600"]);
      held.push({ sandbox, run });
      if (!(await waitForFile(sandbox, "up", 30_000))) {
        stopReason = `sandbox ${held.length} did not start its process within 30 s`;
        held.pop();
        await sandbox.destroy();
        break;
      }
    } catch (e) {
      stopReason = `create/exec failed at ${held.length + 1}: ${e instanceof Error ? e.message : String(e)}`;
      break;
    }
    if (held.length % 64 === 0) console.log(`holding ${held.length} sandboxes`);
  }
  const rampMs = performance.now() - rampStart;
  const memAtPeak = memAvailable();
  // Every held sandbox must still be alive at the peak (none silently died).
  const stillRunning = (await Promise.all(held.map((h) => Promise.race([h.run.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), 1))])))).filter(Boolean).length;
  const teardownStart = performance.now();
  await Promise.all(held.map((h) => h.sandbox.destroy()));
  await Promise.allSettled(held.map((h) => h.run));
  return {
    cap, heldWithProxyBridge: values["hold-with-proxy"], poolSize, held: held.length, stillRunningAtPeak: stillRunning, stopReason,
    rampSeconds: round(rampMs / 1000, 1),
    hostMemoryUsedMiB: Math.round((memBefore - memAtPeak) / 2 ** 20),
    perSandboxMemoryKiB: held.length > 0 ? Math.round((memBefore - memAtPeak) / held.length / 1024) : null,
    teardownSeconds: round((performance.now() - teardownStart) / 1000, 1),
    leftoverSandboxes: backend.live().length,
  };
}

async function main(): Promise<void> {
  const proxy = createServer((_req, res) => res.end("ok"));
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  const addr = proxy.address();
  if (addr === null || typeof addr === "string") throw new InfraError("internal", "no proxy port");
  const network = { proxy: { host: "127.0.0.1", port: addr.port } };
  const seed = { workspaceFiles: { "task.md": "bench" } };

  const cold = await BwrapBackend.open({ pool: { size: 0 } });
  const coldDirect = await BwrapBackend.open({ pool: { size: 0 }, launcher: "direct" });
  const pooled = await BwrapBackend.open({ pool: { size: poolSize } });
  const local = await LocalUnsafeBackend.open();
  const starts: StartVariant[] = [
    startVariant("bwrap cold", cold, { limits: LIMITS, ...seed }),
    startVariant("bwrap cold + proxy bridge", cold, { limits: LIMITS, ...seed, network }),
    startVariant("bwrap cold, spawned by this process", coldDirect, { limits: LIMITS, ...seed }),
    startVariant("bwrap pooled", pooled, { limits: LIMITS, ...seed }, pooled),
    startVariant("bwrap pooled + proxy bridge", pooled, { limits: LIMITS, ...seed, network }, pooled),
    startVariant("local-unsafe", local, { limits: LIMITS, ...seed }),
  ];
  const running: ExecVariant[] = [
    { name: "exec in a running bwrap sandbox", sandbox: await cold.create({ limits: LIMITS }), samples: [], cpuMs: 0 },
    { name: "exec in a running bwrap sandbox + proxy bridge", sandbox: await cold.create({ limits: LIMITS, network }), samples: [], cpuMs: 0 },
  ];
  const plain: number[] = [];
  let plainCpu = 0;
  const loadBefore = loadavg();
  // Warm-up (page cache, JIT), then interleave so every variant sees the same background load.
  for (const v of starts) await startToFirstExec(v);
  for (const v of running) await execInRunning(v);
  await plainSpawn();
  for (const v of starts) {
    v.total.length = v.create.length = v.exec.length = 0;
    v.cpuMs = v.refillCpuMs = v.loopBusyMs = 0;
  }
  for (const v of running) {
    v.samples.length = 0;
    v.cpuMs = 0;
  }
  const poolBefore = pooled.poolStats();
  // A new order every iteration: what one variant leaves behind (a namespace's teardown runs on in a kernel worker)
  // must not always land on the same next variant.
  const random = mulberry32(4);
  type Step = () => Promise<void>;
  const steps: Step[] = [
    async () => {
      const c0 = cpuMsSoFar();
      plain.push(await plainSpawn());
      plainCpu += cpuMsSoFar() - c0;
    },
    ...starts.map((v): Step => () => startToFirstExec(v)),
    ...running.map((v): Step => () => execInRunning(v)),
  ];
  for (let i = 0; i < iterations; i++) {
    const order = steps.map((step) => ({ step, key: random() })).sort((a, b) => a.key - b.key);
    for (const { step } of order) await step();
  }
  const poolAfter = pooled.poolStats();
  const loadAfterLatency = loadavg();
  for (const v of running) await v.sandbox.destroy();
  const perRun = (ms: number): number => round(ms / iterations, 1);
  const latency = {
    "plain spawn": { startToFirstExec: summary(plain), cpuMsPerRun: perRun(plainCpu) },
    ...Object.fromEntries(starts.map((v) => [v.name, {
      startToFirstExec: summary(v.total), create: summary(v.create), firstExec: summary(v.exec), cpuMsPerRun: perRun(v.cpuMs), loopBusyMsPerRun: perRun(v.loopBusyMs),
      ...(v.pool ? { refillCpuMsPerRun: perRun(v.refillCpuMs) } : {}),
    }])),
    ...Object.fromEntries(running.map((v) => [v.name, { exec: summary(v.samples), cpuMsPerRun: perRun(v.cpuMs) }])),
  };
  console.log("start → first exec (ms):", JSON.stringify(latency, null, 2));
  const poolHits = poolAfter.hits - poolBefore.hits;
  const poolMisses = poolAfter.misses - poolBefore.misses;

  await cold.close();
  await coldDirect.close();
  await pooled.close();
  await local.close();
  // The ramp goes through a backend with the default pool, as the rollout runner opens it.
  const rampBackend = await BwrapBackend.open();
  const concurrency = await ramp(rampBackend, network);
  await rampBackend.close();
  proxy.close();

  const result = {
    benchmark: "sandbox",
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, totalMemoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, cgroups: cold.warnings.length === 0 ? "memory+pids enforced" : cold.warnings },
    loadAverageAtStart: loadBefore.map((x) => round(x, 1)),
    loadAverageAfterLatency: loadAfterLatency.map((x) => round(x, 1)),
    loadAverageAtEnd: loadavg().map((x) => round(x, 1)),
    iterations,
    ballastMiB: ballast.length,
    targets: { startToFirstExecP50Ms: 10, concurrentSandboxes: 256 },
    pool: { size: poolSize, hitsDuringRun: poolHits, missesDuringRun: poolMisses },
    latencyMs: latency,
    concurrency,
  };
  const out = resolve(values.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result.concurrency, null, 2));
  console.log(`wrote ${out}`);
}

await main();
