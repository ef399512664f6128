/**
 * `npm run bench:sandbox`: sandbox start → first exec latency (p50/p99) for the bwrap backend, with and without the
 * proxy bridge, next to a plain unsandboxed spawn and the local-unsafe backend in the same run; then the most
 * concurrent bwrap sandboxes held on this machine (ramped up to a cap, each holding a sleeping process).
 * Writes docs/bench/sandbox.json.
 *
 * CPU time per start (this process and all descendants, via a cgroup v1 cpuacct group) is reported next to wall-clock latency: on a shared, loaded machine the
 * wall-clock numbers mostly measure waiting for a core, the CPU time does not.
 *
 * Options: --iterations N (default 40), --cap N (default 512), --hold-with-proxy (held sandboxes also run the proxy
 * forwarder), --min-free-mib N (stop ramping below this much available memory, default 3072), --out FILE.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { cpus, loadavg, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { BwrapBackend } from "../sandbox/bwrap/backend.js";
import { LocalUnsafeBackend } from "../sandbox/local/backend.js";
import type { ExecResult, Sandbox, SandboxBackend, SandboxCreateOptions } from "../sandbox/types.js";

const { values } = parseArgs({
  options: {
    iterations: { type: "string", default: "40" },
    cap: { type: "string", default: "512" },
    "hold-with-proxy": { type: "boolean", default: false },
    "min-free-mib": { type: "string", default: "3072" },
    out: { type: "string", default: "docs/bench/sandbox.json" },
  },
});
const iterations = Number(values.iterations);
const cap = Number(values.cap);
const minFreeBytes = Number(values["min-free-mib"]) * 1024 * 1024;
const LIMITS = { memoryBytes: 256 * 1024 * 1024, maxPids: 128, wallClockMs: 3_600_000 };

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

function summary(samples: number[]): { n: number; p50: number; p99: number; mean: number } {
  const s = [...samples].sort((a, b) => a - b);
  const round = (x: number): number => Math.round(x * 100) / 100;
  return { n: s.length, p50: round(percentile(s, 50)), p99: round(percentile(s, 99)), mean: round(s.reduce((a, b) => a + b, 0) / s.length) };
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

interface Variant {
  name: string;
  backend: SandboxBackend;
  options: SandboxCreateOptions;
  total: number[];
  create: number[];
  exec: number[];
  /** CPU time (ours + all descendants') per start → first exec: a cost the machine's load barely inflates. */
  cpuMs: number;
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

async function startToFirstExec(v: Variant): Promise<void> {
  const c0 = cpuMsSoFar();
  const t0 = performance.now();
  const s = await v.backend.create(v.options);
  const t1 = performance.now();
  const r = await s.exec(["true"]);
  const t2 = performance.now();
  if (r.exitCode !== 0) throw new Error(`${v.name}: first exec failed: ${r.stderr}`);
  v.create.push(t1 - t0);
  v.exec.push(t2 - t1);
  v.total.push(t2 - t0);
  v.cpuMs += cpuMsSoFar() - c0;
  await s.destroy();
}

async function waitForFile(s: Sandbox, name: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (existsSync(join(s.workspaceDir, name))) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}

async function main(): Promise<void> {
  const proxy = createServer((_req, res) => res.end("ok"));
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  const addr = proxy.address();
  if (addr === null || typeof addr === "string") throw new Error("no proxy port");
  const network = { proxy: { host: "127.0.0.1", port: addr.port } };

  const bwrap = await BwrapBackend.open();
  const local = await LocalUnsafeBackend.open();
  const variants: Variant[] = [
    { name: "bwrap", backend: bwrap, options: { limits: LIMITS, workspaceFiles: { "task.md": "bench" } }, total: [], create: [], exec: [], cpuMs: 0 },
    { name: "bwrap+proxy-bridge", backend: bwrap, options: { limits: LIMITS, workspaceFiles: { "task.md": "bench" }, network }, total: [], create: [], exec: [], cpuMs: 0 },
    { name: "local-unsafe", backend: local, options: { limits: LIMITS, workspaceFiles: { "task.md": "bench" } }, total: [], create: [], exec: [], cpuMs: 0 },
  ];
  const plain: number[] = [];
  const loadBefore = loadavg();
  // Warm-up (page cache, JIT), then interleave so every variant sees the same background load.
  for (const v of variants) await startToFirstExec(v);
  await plainSpawn();
  for (const v of variants) {
    v.total.length = v.create.length = v.exec.length = 0;
    v.cpuMs = 0;
  }
  let plainCpu = 0;
  for (let i = 0; i < iterations; i++) {
    const c0 = cpuMsSoFar();
    plain.push(await plainSpawn());
    plainCpu += cpuMsSoFar() - c0;
    for (const v of variants) await startToFirstExec(v);
  }
  const latency = {
    plainSpawn: { ...summary(plain), cpuMsPerRun: Math.round((plainCpu / iterations) * 10) / 10 },
    ...Object.fromEntries(variants.map((v) => [v.name, {
      startToFirstExec: summary(v.total), create: summary(v.create), firstExec: summary(v.exec), cpuMsPerRun: Math.round((v.cpuMs / iterations) * 10) / 10,
    }])),
  };
  console.log("start → first exec (ms):", JSON.stringify(latency, null, 2));

  // Ramp: hold sandboxes, each with a sleeping process, until the cap, a failure, or memory runs low.
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
      const sandbox = await bwrap.create({ limits: LIMITS, ...(values["hold-with-proxy"] ? { network } : {}) });
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
  const stillRunning = (await Promise.all(held.map(async (h) => (await Promise.race([h.run.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), 1))]))))).filter(Boolean).length;
  const teardownStart = performance.now();
  await Promise.all(held.map((h) => h.sandbox.destroy()));
  await Promise.allSettled(held.map((h) => h.run));
  const teardownMs = performance.now() - teardownStart;
  const leftovers = bwrap.live().length;
  await bwrap.close();
  await local.close();
  proxy.close();

  const result = {
    benchmark: "sandbox",
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, totalMemoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, cgroups: bwrap.warnings.length === 0 ? "memory+pids enforced" : bwrap.warnings },
    loadAverageAtStart: loadBefore.map((x) => Math.round(x * 10) / 10),
    loadAverageAtEnd: loadavg().map((x) => Math.round(x * 10) / 10),
    iterations,
    targets: { startToFirstExecP50Ms: 10, concurrentSandboxes: 256 },
    latencyMs: latency,
    concurrency: {
      cap,
      heldWithProxyBridge: values["hold-with-proxy"],
      held: held.length,
      stillRunningAtPeak: stillRunning,
      stopReason,
      rampSeconds: Math.round(rampMs / 100) / 10,
      hostMemoryUsedMiB: Math.round((memBefore - memAtPeak) / 2 ** 20),
      perSandboxMemoryKiB: held.length > 0 ? Math.round((memBefore - memAtPeak) / held.length / 1024) : null,
      teardownSeconds: Math.round(teardownMs / 100) / 10,
      leftoverSandboxes: leftovers,
    },
  };
  const out = resolve(values.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result.concurrency, null, 2));
  console.log(`wrote ${out}`);
}

await main();
