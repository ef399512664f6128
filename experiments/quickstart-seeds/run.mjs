// Issue 20's measurement: the quickstart, seed after seed, each a fresh `harnessrl quickstart` with `seed` and
// `model.seed` set to the seed, recording what the issue asks for per run (seed, before, after, z, wall time, steps)
// and how loaded the machine was while it ran (the bar is for a machine as loaded as a developer's usually is).
//
//   node experiments/quickstart-seeds/run.mjs [--seeds 0-9 | 0,3,5] [--config configs/quickstart.yaml]
//        [--root runs/quickstart-seeds] [--set path=value]... [--load CORES] [--check]
//
// Run from the repository root after `npm run build`. A seed with a summary.json is skipped and an interrupted one
// resumes (the quickstart resumes its run directory), so the command can simply be run again. --set goes to every
// seed's quickstart (e.g. an arm: --set algorithm.lr=0.002). --load 0.5 runs half a core of busy load beside each seed
// (load.mjs: the developer's-machine load of sessions 35–44) and records how busy the machine was (/proc/stat).
// Then: node experiments/quickstart-seeds/table.mjs --root DIR
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { busyShare, cpuTicks, machineCores, startLoad } from "./load.mjs";

/** "0-9", "0,3,5" or a mix ("0-2,7") as a list of distinct seeds, in order. */
export function parseSeeds(text) {
  const out = [];
  for (const part of text.split(",")) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(part);
    if (!m) throw new Error(`--seeds: "${part}" is not a seed or a range (e.g. 0-9 or 0,3,5)`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo || hi - lo > 1000) throw new Error(`--seeds: bad range "${part}"`);
    for (let s = lo; s <= hi; s++) if (!out.includes(s)) out.push(s);
  }
  return out;
}

/**
 * The machine's 1-minute load average, sampled every `everyMs` while a seed runs: the run's own processes are in it
 * (a quickstart alone keeps both cores busy: load ~8–12), so it says how crowded the machine was, not by whom.
 */
function loadSampler(everyMs) {
  const samples = [loadavg()[0]];
  const timer = setInterval(() => samples.push(loadavg()[0]), everyMs);
  return {
    stop() {
      clearInterval(timer);
      const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
      return { samples: samples.length, mean, max: Math.max(...samples), atStart: samples[0] };
    },
  };
}

function quickstart(args) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ["dist/cli/main.js", "quickstart", ...args], { stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("exit", (code, signal) => resolvePromise(code ?? (signal ? 128 : 1)));
  });
}

/** The seed's own record of its attempts (one per process that ran it; a resume adds one). */
function readSweep(path) {
  if (!existsSync(path)) return { seed: null, attempts: [] };
  const parsed = JSON.parse(readFileSync(path, "utf8"));
  return { seed: parsed.seed, attempts: Array.isArray(parsed.attempts) ? parsed.attempts : [] };
}

export async function runSeed({ seed, config, root, sets, check, load: addLoad = 0, loadEveryMs = 15_000 }) {
  const runDir = join(root, `s${seed}`);
  const args = ["--config", config, "--run-dir", runDir, "--set", `seed=${seed}`, "--set", `model.seed=${seed}`, ...sets.flatMap((s) => ["--set", s])];
  if (check) {
    if ((await quickstart([...args, "--check"])) !== 0) throw new Error(`seed ${seed}: the config does not validate`);
    return "checked";
  }
  if (existsSync(join(runDir, "summary.json"))) {
    console.log(`[quickstart-seeds] seed ${seed}: done before, skipped`);
    return "skipped";
  }
  mkdirSync(runDir, { recursive: true });
  const sweepPath = join(runDir, "sweep.json");
  const sweep = readSweep(sweepPath);
  console.log(`[quickstart-seeds] seed ${seed}${sweep.attempts.length > 0 ? ` (resuming: attempt ${sweep.attempts.length + 1})` : ""}`);
  const added = addLoad > 0 ? startLoad(addLoad) : null;
  const started = Date.now();
  const ticks = cpuTicks();
  const load = loadSampler(loadEveryMs);
  let code;
  let loadStats;
  try {
    code = await quickstart(args);
  } finally {
    loadStats = load.stop();
    await added?.stop();
  }
  const machine = { cores: machineCores(), busyShare: busyShare(ticks, cpuTicks()), loadAdded: addLoad };
  const attempt = { startedAt: new Date(started).toISOString(), wallSeconds: (Date.now() - started) / 1000, exitCode: code, load: loadStats, machine };
  writeFileSync(sweepPath, `${JSON.stringify({ seed, config, sets, attempts: [...sweep.attempts, attempt] }, null, 2)}\n`);
  if (code !== 0) throw new Error(`seed ${seed}: harnessrl quickstart exited with ${code}`);
  return "ran";
}

async function main() {
  const { values } = parseArgs({
    options: {
      seeds: { type: "string", default: "0-9" },
      config: { type: "string", default: "configs/quickstart.yaml" },
      root: { type: "string", default: "runs/quickstart-seeds" },
      set: { type: "string", multiple: true, default: [] },
      load: { type: "string", default: "0" },
      check: { type: "boolean", default: false },
    },
  });
  const seeds = parseSeeds(values.seeds);
  const load = Number(values.load);
  if (!(Number.isFinite(load) && load >= 0 && load <= 64)) throw new Error(`--load: "${values.load}" is not a number of cores from 0 to 64`);
  for (const s of values.set) if (/^\s*(model\.)?seed\s*=/.test(s)) throw new Error(`--set ${s}: the sweep sets seed and model.seed itself`);
  const root = resolve(values.root);
  mkdirSync(root, { recursive: true });
  const config = resolve(values.config);
  writeFileSync(join(root, "plan.json"), `${JSON.stringify({ config, seeds, sets: values.set, load }, null, 2)}\n`);
  // A seed that fails is reported and the sweep goes on: an unattended ten-run sweep should not stop at the third.
  const failed = [];
  for (const seed of seeds) {
    try {
      await runSeed({ seed, config, root, sets: values.set, check: values.check, load });
    } catch (e) {
      console.error(`[quickstart-seeds] ${e instanceof Error ? e.message : String(e)}`);
      failed.push(seed);
    }
  }
  if (failed.length > 0) throw new Error(`seeds ${failed.join(", ")} failed (run again to resume them)`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e) => {
    console.error(`quickstart-seeds: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  });
}
