/**
 * `npm run bench:rollouts`: what one quickstart-shaped rollout costs the machine, and where that CPU goes, side by side
 * for the ways of running it: sandboxes' launch chains forked by the launcher process or by the control plane itself
 * (`HARNESSRL_SANDBOX_LAUNCHER=direct`), built-in harnesses bundled or not (`HARNESSRL_BUILTIN_BUNDLES=0`), our own
 * tool and verifier programs run in the control plane or in sandboxes (`HARNESSRL_NATIVE_PROGRAMS=0`), harness processes
 * with or without `--liftoff-only` (`HARNESSRL_BUILTIN_NODE_FLAGS=`, definitions.ts), compiled from their V8 code cache
 * or from source (`HARNESSRL_BUILTIN_CODE_CACHE=0`, cached-start.ts).
 *
 * Each arm is one `harnessrl rollout` of the same tasks (default: 24 calcrun tasks × chat-agent and resp-agent, 16 at
 * once, bwrap sandboxes) with the oracle engine, which answers instantly: the numbers are the infrastructure's cost
 * (sandboxes, harness processes, proxy, records, tools, verifiers), not the model's. Rounds run the arms in a new
 * random order each, so the machine's load hits all alike. Per-process CPU is sampled from /proc
 * (process-cpu.ts) and grouped by kind. Writes docs/bench/rollouts.json.
 *
 * Options: --tasks SPEC, --harness LIST, --concurrency N (16), --rounds N (2), --out FILE.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { InfraError } from "../core/errors.js";
import { mulberry32 } from "../core/random.js";
import { writeBenchResult } from "./output.js";
import { ProcessCpuSampler, type KindCpu } from "./process-cpu.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "calcrun:train?n=24&seed=1" },
    harness: { type: "string", default: "chat-agent,resp-agent" },
    concurrency: { type: "string", default: "16" },
    rounds: { type: "string", default: "2" },
    out: { type: "string", default: "docs/bench/rollouts.json" },
  },
});

const CLI = fileURLToPath(new URL("../cli/main.js", import.meta.url));

interface Arm {
  name: string;
  env: Record<string, string>;
}

const ARMS: Arm[] = [
  { name: "launcher, bundled harnesses", env: {} },
  { name: "launcher, bundled harnesses without their V8 code cache (before 2026-12-08)", env: { HARNESSRL_BUILTIN_CODE_CACHE: "0" } },
  { name: "launcher, bundled harnesses, V8's default WebAssembly tiering (before 2026-12-07)", env: { HARNESSRL_BUILTIN_NODE_FLAGS: "" } },
  { name: "launcher, bundled harnesses, tools and verifiers in sandboxes (before 2026-12-06)", env: { HARNESSRL_NATIVE_PROGRAMS: "0" } },
  { name: "launcher, unbundled harnesses", env: { HARNESSRL_BUILTIN_BUNDLES: "0" } },
  { name: "spawned by the control plane, bundled harnesses", env: { HARNESSRL_SANDBOX_LAUNCHER: "direct" } },
  { name: "spawned by the control plane, unbundled harnesses, tools and verifiers in sandboxes (before 2026-12-05)", env: { HARNESSRL_SANDBOX_LAUNCHER: "direct", HARNESSRL_BUILTIN_BUNDLES: "0", HARNESSRL_NATIVE_PROGRAMS: "0" } },
];

/** Kinds of processes in a rollout, by command line. */
function classify(cmdline: string): string | null {
  if (cmdline.includes("main.js rollout")) return "control plane (engine, proxy, records)";
  if (/harness\/builtin\/(bundles\/)?[a-z-]+-agent\.[cm]?js/.test(cmdline)) return "harness";
  if (cmdline.includes("--max-old-space-size=32")) return "sandbox agent";
  if (cmdline.includes("sandbox/launcher/main.js")) return "launcher";
  if (cmdline.includes("disk-meter/main.js")) return "disk meter";
  if (cmdline.includes("verify.cjs")) return "verifier";
  if (/(^|\s|\/)calc(\s|$)/.test(cmdline) || cmdline.startsWith("node ./calc")) return "tool (calc and its stub)";
  if (cmdline.includes("bwrap") || cmdline.includes("setpriv")) return "bwrap, setpriv";
  if (/^(\/bin\/)?(sh|du|rm|cat|true)(\s|$)/.test(cmdline)) return "sh, du and other small programs";
  return null;
}

interface RunResult {
  wallSeconds: number;
  rollouts: number;
  statuses: Record<string, number>;
  cpu: Record<string, KindCpu>;
}

async function runArm(arm: Arm): Promise<RunResult> {
  const out = mkdtempSync(join(tmpdir(), "hrl-bench-rollouts-"));
  try {
    const args = [CLI, "rollout", "--engine", "oracle", "--tasks", values.tasks, "--harness", values.harness, "--samples", "1", "--concurrency", values.concurrency, "--max-turns", "4", "--timeout-s", "120", "--memory-mb", "1024", "--out", out];
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...arm.env } });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
    const sampler = new ProcessCpuSampler(child.pid ?? -1, 25);
    sampler.start();
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    const wallSeconds = (performance.now() - t0) / 1000;
    const cpu = sampler.stop(classify);
    if (code !== 0) throw new InfraError("bench_check_failed", `${arm.name}: harnessrl rollout exited ${code}: ${stderr}`);
    const lines = readFileSync(join(out, "rollouts.jsonl"), "utf8").trim().split("\n");
    const statuses: Record<string, number> = {};
    for (const line of lines) {
      const status = (JSON.parse(line) as { status: string }).status;
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
    return { wallSeconds, rollouts: lines.length, statuses, cpu };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

const round = (x: number, digits = 3): number => Number(x.toFixed(digits));

async function main(): Promise<void> {
  const rounds = Math.max(1, Number(values.rounds));
  const random = mulberry32(7);
  const results = new Map<string, RunResult[]>(ARMS.map((a) => [a.name, []]));
  const loadBefore = loadavg();
  for (let r = 0; r < rounds; r++) {
    const order = ARMS.map((arm) => ({ arm, key: random() })).sort((a, b) => a.key - b.key);
    for (const { arm } of order) {
      const res = await runArm(arm);
      results.get(arm.name)!.push(res);
      const cpuTotal = Object.values(res.cpu).reduce((a, k) => a + k.cpuSeconds, 0);
      console.error(`[round ${r + 1}/${rounds}] ${arm.name}: ${res.rollouts} rollouts in ${res.wallSeconds.toFixed(1)} s, ${(cpuTotal / res.rollouts).toFixed(2)} CPU-s each`);
    }
  }
  const arms = ARMS.map((arm) => {
    const runs = results.get(arm.name)!;
    const rollouts = runs.reduce((a, r) => a + r.rollouts, 0);
    const kinds = new Map<string, KindCpu>();
    for (const run of runs) {
      for (const [kind, k] of Object.entries(run.cpu)) {
        const sum = kinds.get(kind) ?? { processes: 0, cpuSeconds: 0 };
        kinds.set(kind, { processes: sum.processes + k.processes, cpuSeconds: sum.cpuSeconds + k.cpuSeconds });
      }
    }
    const cpuPerRollout = [...kinds.values()].reduce((a, k) => a + k.cpuSeconds, 0) / rollouts;
    return {
      arm: arm.name,
      env: arm.env,
      runs: runs.map((r) => ({ wallSeconds: round(r.wallSeconds, 1), rollouts: r.rollouts, statuses: r.statuses })),
      medianRolloutsPerSecond: round(median(runs.map((r) => r.rollouts / r.wallSeconds))),
      cpuSecondsPerRollout: round(cpuPerRollout),
      byKind: Object.fromEntries(
        [...kinds.entries()].sort((a, b) => b[1].cpuSeconds - a[1].cpuSeconds).map(([kind, k]) => [kind, { cpuSecondsPerRollout: round(k.cpuSeconds / rollouts), processesPerRollout: round(k.processes / rollouts, 2) }]),
      ),
    };
  });
  const base = arms[arms.length - 1]!;
  writeBenchResult(values.out, {
    benchmark: "rollouts",
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version },
    loadAverageAtStart: loadBefore.map((x) => round(x, 1)),
    loadAverageAtEnd: loadavg().map((x) => round(x, 1)),
    settings: { tasks: values.tasks, harness: values.harness, concurrency: Number(values.concurrency), rounds, engine: "oracle" },
    arms,
    ratiosToLast: Object.fromEntries(arms.map((a) => [a.arm, { rolloutsPerSecond: round(a.medianRolloutsPerSecond / base.medianRolloutsPerSecond), cpuPerRollout: round(a.cpuSecondsPerRollout / base.cpuSecondsPerRollout) }])),
  });
}

await main();
