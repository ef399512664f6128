// Results of experiments/quickstart-seeds/run.mjs against issue 20's bar: a markdown table (one row per seed: before,
// after, the paired change with its standard error and z, RL and SFT steps, wall time, load), the count of seeds that
// meet the bar, table.json, and seeds.svg (each seed's before → after with the change's standard error).
//   node experiments/quickstart-seeds/table.mjs [--root runs/quickstart-seeds] [--gain 0.15] [--z 3] [--minutes 10]
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

const readJson = (path) => (existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : null);
const finite = (v) => typeof v === "number" && Number.isFinite(v);

/** One seed's row from its run directory (null fields where the run has not got that far). */
export function seedRow(root, seed) {
  const dir = join(root, `s${seed}`);
  const summary = readJson(join(dir, "summary.json"));
  const sweep = readJson(join(dir, "sweep.json"));
  const attempts = Array.isArray(sweep?.attempts) ? sweep.attempts : [];
  // The sweep's own clock covers every process that ran the seed (a resume included); without it, the summary's.
  const wallSeconds = attempts.length > 0 ? attempts.reduce((s, a) => s + (finite(a.wallSeconds) ? a.wallSeconds : 0), 0) : finite(summary?.wallSeconds) ? summary.wallSeconds : null;
  const loads = attempts.map((a) => a.load).filter((l) => l && finite(l.mean));
  const d = summary?.delta ?? null;
  return {
    seed,
    finished: summary !== null,
    attempts: attempts.length,
    before: finite(summary?.before?.overall) ? { value: summary.before.overall, se: summary.before.overallStderr } : null,
    after: finite(summary?.after?.overall) ? { value: summary.after.overall, se: summary.after.overallStderr } : null,
    change: d && finite(d.overall) ? { value: d.overall, se: d.stderr, z: d.z, paired: d.paired === true, commonRandomNumbers: d.commonRandomNumbers === true, groups: d.groups ?? null, dropped: finite(d.dropped) ? d.dropped : 0 } : null,
    steps: summary ? { ran: summary.steps, planned: summary.plannedSteps, timeCapped: summary.timeCapped === true } : null,
    sft: summary?.warmStart ? { steps: summary.warmStart.steps, planned: summary.warmStart.plannedSteps, nll: summary.warmStart.finalNll, demoProb: finite(summary.warmStart.finalDemoProb) ? summary.warmStart.finalDemoProb : null } : null,
    timing: summary?.timing ?? null,
    wallSeconds,
    load: loads.length > 0 ? { mean: loads.reduce((s, l) => s + l.mean, 0) / loads.length, max: Math.max(...loads.map((l) => l.max)) } : null,
  };
}

/** Whether a finished row meets the bar: a gain of at least `gain` at z ≥ `z`, within `minutes` of wall time. */
export function verdict(row, bar) {
  const gain = row.change !== null && row.change.value >= bar.gain && finite(row.change.z) && row.change.z >= bar.z;
  const time = row.wallSeconds !== null && row.wallSeconds <= bar.minutes * 60;
  return { gain, time, both: gain && time };
}

/** Mean of the seeds' changes and its standard error across seeds (the spread between seeds, not within one run). */
export function acrossSeeds(rows) {
  const xs = rows.filter((r) => r.change !== null).map((r) => r.change.value);
  const n = xs.length;
  if (n === 0) return { n, mean: null, se: null };
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const se = n > 1 ? Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1) / n) : null;
  return { n, mean, se };
}

const pct = (v) => (100 * v).toFixed(1);
const signed = (v) => `${v >= 0 ? "+" : ""}${pct(v)}`;

export function buildTable(root, bar) {
  const plan = readJson(join(root, "plan.json"));
  if (!plan || !Array.isArray(plan.seeds)) throw new Error(`${root}/plan.json missing: run experiments/quickstart-seeds/run.mjs first`);
  const rows = plan.seeds.map((s) => seedRow(root, s)).map((r) => ({ ...r, verdict: verdict(r, bar) }));
  const finished = rows.filter((r) => r.finished);
  const count = (k) => finished.filter((r) => r.verdict[k]).length;
  return { root, plan, bar, rows, finished: finished.length, meets: { gain: count("gain"), time: count("time"), both: count("both") }, changeAcrossSeeds: acrossSeeds(finished) };
}

export function markdown(t) {
  const head = "| seed | before | after | change (paired SE, z) | RL steps | SFT steps (final NLL, demo prob) | wall | load mean / max | +gain at z | time |";
  const lines = [head, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"];
  for (const r of t.rows) {
    if (!r.finished) {
      lines.push(`| ${r.seed} | not finished${r.attempts > 0 ? ` (${r.attempts} attempt(s))` : ""} | | | | | | | | |`);
      continue;
    }
    const c = r.change ? `**${signed(r.change.value)} ± ${pct(r.change.se)}** (z ${finite(r.change.z) ? r.change.z.toFixed(1) : "–"}${!r.change.paired ? ", unpaired" : r.change.dropped > 0 ? `, paired without ${r.change.dropped} group(s) lost to infra errors` : ""}${r.change.commonRandomNumbers ? ", CRN" : ""})` : "–";
    const steps = r.steps ? `${r.steps.ran}/${r.steps.planned}${r.steps.timeCapped ? " (time cap)" : ""}` : "–";
    const sft = r.sft ? `${r.sft.steps}/${r.sft.planned} (${r.sft.nll.toFixed(4)}${r.sft.demoProb === null ? "" : `, ${r.sft.demoProb.toFixed(3)}`})` : "–";
    const wall = r.wallSeconds === null ? "–" : `${(r.wallSeconds / 60).toFixed(1)} min`;
    const load = r.load ? `${r.load.mean.toFixed(1)} / ${r.load.max.toFixed(1)}` : "–";
    const v = (ok) => (ok ? "yes" : "no");
    lines.push(`| ${r.seed} | ${r.before ? `${pct(r.before.value)} % ± ${pct(r.before.se)}` : "–"} | ${r.after ? `${pct(r.after.value)} % ± ${pct(r.after.se)}` : "–"} | ${c} | ${steps} | ${sft} | ${wall} | ${load} | ${v(r.verdict.gain)} | ${v(r.verdict.time)} |`);
  }
  const a = t.changeAcrossSeeds;
  const across = a.mean === null ? "" : ` Mean change over the ${a.n} finished seeds: ${signed(a.mean)}${a.se === null ? "" : ` ± ${pct(a.se)} (standard error across seeds)`}.`;
  lines.push(
    "",
    `${t.finished} of ${t.rows.length} seeds finished. The bar (+${pct(t.bar.gain)} points at z ≥ ${t.bar.z}, within ${t.bar.minutes} min): gain met by ${t.meets.gain}, time by ${t.meets.time}, both by **${t.meets.both}** of ${t.finished}.${across}`,
  );
  return lines.join("\n");
}

/** Each finished seed's before (grey) and after (blue, ± its standard error) on one axis of held-out pass@1. */
export function svg(t) {
  const rows = t.rows.filter((r) => r.before && r.after);
  const w = 80 + 56 * Math.max(rows.length, 1);
  const h = 300;
  const [top, bottom, left] = [30, 40, 50];
  const y = (v) => top + (1 - v) * (h - top - bottom);
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="11">`, `<text x="${left}" y="16">held-out pass@1 per seed: before (grey) → after RL (blue, ± SE); label: paired change, z</text>`];
  for (const v of [0, 0.25, 0.5, 0.75, 1]) parts.push(`<line x1="${left}" x2="${w - 10}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/><text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${100 * v}%</text>`);
  rows.forEach((r, i) => {
    const x = left + 40 + 56 * i;
    const color = r.verdict.gain ? "#1f6feb" : "#d1242f";
    parts.push(
      `<line x1="${x}" x2="${x}" y1="${y(r.before.value)}" y2="${y(r.after.value)}" stroke="#999" stroke-dasharray="3,2"/>`,
      `<circle cx="${x}" cy="${y(r.before.value)}" r="4" fill="#999"/>`,
      `<line x1="${x}" x2="${x}" y1="${y(Math.min(1, r.after.value + r.after.se))}" y2="${y(Math.max(0, r.after.value - r.after.se))}" stroke="${color}" stroke-width="2"/>`,
      `<circle cx="${x}" cy="${y(r.after.value)}" r="5" fill="${color}"/>`,
      `<text x="${x}" y="${h - 22}" text-anchor="middle">seed ${r.seed}</text>`,
      r.change ? `<text x="${x}" y="${h - 8}" text-anchor="middle">${signed(r.change.value)} (${finite(r.change.z) ? r.change.z.toFixed(1) : "–"})</text>` : "",
    );
  });
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}

function main() {
  const { values } = parseArgs({
    options: {
      root: { type: "string", default: "runs/quickstart-seeds" },
      gain: { type: "string", default: "0.15" },
      z: { type: "string", default: "3" },
      minutes: { type: "string", default: "10" },
    },
  });
  const bar = { gain: Number(values.gain), z: Number(values.z), minutes: Number(values.minutes) };
  if (!Object.values(bar).every(finite)) throw new Error("--gain, --z and --minutes must be numbers");
  const t = buildTable(values.root, bar);
  const md = markdown(t);
  writeFileSync(join(values.root, "table.json"), `${JSON.stringify(t, null, 2)}\n`);
  writeFileSync(join(values.root, "table.md"), `${md}\n`);
  writeFileSync(join(values.root, "seeds.svg"), svg(t));
  console.log(md);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    main();
  } catch (e) {
    console.error(`quickstart-seeds table: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}
