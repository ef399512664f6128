// Recipe arms, paired (docs/training.md, sessions 36-42): each seed's warm start is made once (demonstrations, SFT
// and the before-RL evaluation: the quickstart is deterministic up to RL and its RL rollouts are seeded), and every arm
// resumes a copy of it with its own settings. Two arms of one seed then start from the same weights and their after-RL
// evaluations draw common random numbers, so `harnessrl compare` pairs them group by group: the tightest comparison of
// two recipes this machine allows, at the cost of RL and one evaluation per arm instead of a whole quickstart.
//
//   node experiments/quickstart-seeds/arms.mjs --arm NAME [--arm-set path=value]... [--seeds 25-34]
//        [--against BASE] [--root runs/quickstart-arms] [--config configs/quickstart.yaml] [--set path=value]...
//
// --arm-set: this arm's settings (RL, budget, evaluation; not warm_start.*, model.* or the seed: the arm resumes the
// seed's warm start). --set: settings of every run in ROOT, warm starts included (the warm starts record theirs, and
// a different --set is refused). --against BASE: after the runs, each seed's after-RL evaluation against arm BASE's
// (which must have run in ROOT), a markdown table and ROOT/arms/NAME/against-BASE.json. Run from the repository root
// after `npm run build`; a finished run is skipped and an interrupted one resumes, so the command can simply be run
// again. A shipped-recipe baseline is an arm without --arm-set.
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { parseSeeds } from "./run.mjs";

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
// What an arm cannot change: it resumes a warm start made with the seed and the warm-start settings of ROOT.
const NOT_IN_ARMS = /^\s*(seed|model\.|warm_start\.|warm_start\s*=)/;

function quickstart(args) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ["dist/cli/main.js", "quickstart", ...args], { stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("exit", (code, signal) => resolvePromise(code ?? (signal ? 128 : 1)));
  });
}

const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));
// An arm starts as a copy of its warm start, whose summary.json has no after-RL result: only the arm's own summary
// (written last, after eval-after.json) has one, so a run stopped between those two writes is not taken as finished.
const finished = (dir) => existsSync(join(dir, "summary.json")) && existsSync(join(dir, "eval-after.json")) && readJson(join(dir, "summary.json")).after != null;
const sameList = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

/** The settings a folder was made with (warm.json / arm.json): a rerun with others would mix two experiments. */
function claim(path, record, what) {
  if (existsSync(path)) {
    const had = readJson(path);
    for (const key of Object.keys(record)) {
      const same = Array.isArray(record[key]) ? sameList(had[key] ?? [], record[key]) : had[key] === record[key];
      if (!same) throw new Error(`${what} was made with ${key} ${JSON.stringify(had[key])}, not ${JSON.stringify(record[key])}: use another --root or --arm`);
    }
  } else writeFileSync(path, `${JSON.stringify(record, null, 2)}\n`);
}

/** The seed's warm start: the quickstart with no RL steps and no after-RL evaluation (made once per ROOT and seed). */
async function warmStart({ root, seed, config, sets }) {
  const dir = join(root, "warm", `s${seed}`);
  if (existsSync(join(dir, "summary.json"))) return dir;
  mkdirSync(dir, { recursive: true });
  claim(join(dir, "warm.json"), { config, sets }, `warm start ${dir}`);
  console.log(`[arms] seed ${seed}: warm start`);
  const started = Date.now();
  const code = await quickstart(["--config", config, "--run-dir", dir, "--set", `seed=${seed}`, "--set", `model.seed=${seed}`, ...sets.flatMap((s) => ["--set", s]), "--set", "budget.steps=0", "--set", "eval.after=false"]);
  if (code !== 0) throw new Error(`seed ${seed}: the warm start's quickstart exited with ${code}`);
  writeFileSync(join(dir, "warm-time.json"), `${JSON.stringify({ wallSeconds: (Date.now() - started) / 1000 })}\n`);
  return dir;
}

/** One arm on one seed: a copy of the warm start, resumed with the arm's settings (RL and the after-RL evaluation). */
async function runArm({ root, arm, seed, config, sets, armSets }) {
  const warm = await warmStart({ root, seed, config, sets });
  claim(join(warm, "warm.json"), { config, sets }, `warm start ${warm}`);
  const dir = join(root, "arms", arm, `s${seed}`);
  if (finished(dir)) {
    console.log(`[arms] ${arm} seed ${seed}: done before, skipped`);
    return;
  }
  if (!existsSync(dir)) cpSync(warm, dir, { recursive: true });
  console.log(`[arms] ${arm} seed ${seed}`);
  const started = Date.now();
  const code = await quickstart(["--config", config, "--run-dir", dir, "--set", `seed=${seed}`, "--set", `model.seed=${seed}`, ...[...sets, ...armSets].flatMap((s) => ["--set", s])]);
  if (code !== 0) throw new Error(`${arm} seed ${seed}: the quickstart exited with ${code}`);
  writeFileSync(join(dir, "arm-time.json"), `${JSON.stringify({ wallSeconds: (Date.now() - started) / 1000 })}\n`);
}

const pts = (v) => `${v >= 0 ? "+" : "−"}${Math.abs(100 * v).toFixed(1)}`;

/** Each seed's after-RL evaluation of `arm` against `base`'s (harnessrl compare), and the mean over seeds. */
export function against({ root, arm, base, seeds }) {
  const rows = [];
  for (const seed of seeds) {
    const a = join(root, "arms", base, `s${seed}`);
    const b = join(root, "arms", arm, `s${seed}`);
    if (!finished(a) || !finished(b)) continue;
    const r = spawnSync(process.execPath, ["dist/cli/main.js", "compare", a, b, "--json"], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`harnessrl compare ${a} ${b}: ${r.stderr.trim()}`);
    const c = JSON.parse(r.stdout);
    const own = readJson(join(b, "summary.json")).delta;
    const baseOwn = readJson(join(a, "summary.json")).delta;
    rows.push({ seed, change: own?.overall ?? null, z: own?.z ?? null, baseChange: baseOwn?.overall ?? null, vsBase: c.overall.change, vsBaseStderr: c.overall.stderr, up: c.overall.up, down: c.overall.down, commonRandomNumbers: c.commonRandomNumbers });
  }
  const d = rows.map((r) => r.vsBase);
  const mean = d.length ? d.reduce((s, v) => s + v, 0) / d.length : null;
  const se = d.length > 1 && mean !== null ? Math.sqrt(d.reduce((s, v) => s + (v - mean) ** 2, 0) / (d.length - 1) / d.length) : null;
  const lines = [`| seed | ${arm}: change (z) | ${base}: change | ${arm} − ${base} (paired SE; groups up/down) |`, "| --- | --- | --- | --- |"];
  for (const r of rows) lines.push(`| ${r.seed} | ${r.change === null ? "–" : `${pts(r.change)} (z ${r.z.toFixed(1)})`} | ${r.baseChange === null ? "–" : pts(r.baseChange)} | ${pts(r.vsBase)} ± ${(100 * r.vsBaseStderr).toFixed(1)} (${r.up}/${r.down}${r.commonRandomNumbers ? "" : "; no CRN"}) |`);
  const summary = mean === null ? `no seed has both ${arm} and ${base} finished` : `${arm} − ${base} over ${rows.length} seed(s): ${pts(mean)}${se === null ? "" : ` ± ${(100 * se).toFixed(1)} (SE across seeds)`} points`;
  return { rows, mean, se, table: `${lines.join("\n")}\n\n${summary}` };
}

async function main() {
  const { values } = parseArgs({
    options: {
      arm: { type: "string" },
      "arm-set": { type: "string", multiple: true, default: [] },
      seeds: { type: "string", default: "25-34" },
      against: { type: "string" },
      root: { type: "string", default: "runs/quickstart-arms" },
      config: { type: "string", default: "configs/quickstart.yaml" },
      set: { type: "string", multiple: true, default: [] },
    },
  });
  if (values.arm === undefined || !NAME.test(values.arm)) throw new Error("--arm NAME is required (letters, digits, . _ -)");
  if (values.against !== undefined && (!NAME.test(values.against) || values.against === values.arm)) throw new Error("--against names another arm of this root");
  for (const s of values["arm-set"]) if (NOT_IN_ARMS.test(s)) throw new Error(`--arm-set ${s}: an arm resumes the seed's warm start; seeds, model.* and warm_start.* settings belong to --set (every run in the root)`);
  for (const s of values.set) if (/^\s*(model\.)?seed\s*=/.test(s)) throw new Error(`--set ${s}: the arms set seed and model.seed themselves`);
  const seeds = parseSeeds(values.seeds);
  const root = resolve(values.root);
  const config = resolve(values.config);
  mkdirSync(join(root, "arms", values.arm), { recursive: true });
  claim(join(root, "arms", values.arm, "arm.json"), { config, armSets: values["arm-set"] }, `arm ${values.arm}`);
  const failed = [];
  for (const seed of seeds) {
    try {
      await runArm({ root, arm: values.arm, seed, config, sets: values.set, armSets: values["arm-set"] });
    } catch (e) {
      console.error(`[arms] ${e instanceof Error ? e.message : String(e)}`);
      failed.push(seed);
    }
  }
  if (values.against !== undefined) {
    const result = against({ root, arm: values.arm, base: values.against, seeds });
    writeFileSync(join(root, "arms", values.arm, `against-${values.against}.json`), `${JSON.stringify({ rows: result.rows, mean: result.mean, se: result.se }, null, 2)}\n`);
    console.log(result.table);
  }
  if (failed.length > 0) throw new Error(`seeds ${failed.join(", ")} failed (run again to resume them)`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e) => {
    console.error(`quickstart-arms: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  });
}
