// Results of experiments/quickstart-seeds/run.mjs against issue 20's bar: a markdown table (one row per seed: before,
// after, the paired change with its standard error and z, RL and SFT steps, wall time, load), the count of seeds that
// meet the bar, table.json, seeds.svg (each seed's before → after with the change's standard error) and times.svg (each
// seed's wall time by phase against the time bar).
//   node experiments/quickstart-seeds/table.mjs [--root runs/quickstart-seeds] [--gain 0.15] [--z 3] [--minutes 10]
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

const readJson = (path) => (existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : null);
const finite = (v) => typeof v === "number" && Number.isFinite(v);

/**
 * Where a finished run's time went, in seconds, from its summary: the warm start's demonstrations and SFT, the two
 * evaluations, the RL rollouts, the trainer steps, and saves with engine swaps (null without a summary's timing).
 */
export function phasesOf(summary) {
  const w = summary?.warmStart;
  const t = summary?.timing;
  if (!w || !t) return null;
  const s = (v) => (finite(v) ? v : 0);
  return { demos: s(w.demoMs) / 1000, sft: s(w.sftMs) / 1000, evals: s(t.evalBefore) + s(t.evalAfter), rollouts: s(t.rollouts), training: s(t.train), swaps: s(t.swap) };
}

/** One seed's row from its run directory (null fields where the run has not got that far). */
export function seedRow(root, seed) {
  const dir = join(root, `s${seed}`);
  const summary = readJson(join(dir, "summary.json"));
  const sweep = readJson(join(dir, "sweep.json"));
  const attempts = Array.isArray(sweep?.attempts) ? sweep.attempts : [];
  // The sweep's own clock covers every process that ran the seed (a resume included); without it, the summary's.
  const wallSeconds = attempts.length > 0 ? attempts.reduce((s, a) => s + (finite(a.wallSeconds) ? a.wallSeconds : 0), 0) : finite(summary?.wallSeconds) ? summary.wallSeconds : null;
  const loads = attempts.map((a) => a.load).filter((l) => l && finite(l.mean));
  // The machine's busy share over the seed's attempts, weighted by their wall time (run.mjs, /proc/stat).
  const busy = attempts.filter((a) => finite(a.machine?.busyShare) && finite(a.wallSeconds) && a.wallSeconds > 0);
  const busyWall = busy.reduce((s, a) => s + a.wallSeconds, 0);
  const added = attempts.map((a) => a.machine?.loadAdded).filter(finite);
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
    phases: phasesOf(summary),
    wallSeconds,
    load: loads.length > 0 ? { mean: loads.reduce((s, l) => s + l.mean, 0) / loads.length, max: Math.max(...loads.map((l) => l.max)) } : null,
    machine: {
      busyShare: busyWall > 0 ? busy.reduce((s, a) => s + a.machine.busyShare * a.wallSeconds, 0) / busyWall : null,
      loadAdded: added.length > 0 ? Math.max(...added) : null,
    },
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
  const head = "| seed | before | after | change (paired SE, z) | RL steps | SFT steps (final NLL, demo prob) | wall | load mean / max, busy (added) | +gain at z | time |";
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
    const m = r.machine;
    const busy = m.busyShare === null ? "" : `, ${(100 * m.busyShare).toFixed(1)} %${m.loadAdded ? ` (+${m.loadAdded} cores)` : ""}`;
    const load = r.load ? `${r.load.mean.toFixed(1)} / ${r.load.max.toFixed(1)}${busy}` : "–";
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

const PHASE_COLORS = { demos: "#8c6d31", sft: "#bd9e39", evals: "#6b6ecf", rollouts: "#1f6feb", training: "#e6550d", swaps: "#636363", other: "#ccc" };
const PHASE_LABELS = { demos: "demonstrations", sft: "SFT", evals: "evaluations", rollouts: "RL rollouts", training: "RL training", swaps: "saves + swaps", other: "other" };

/** Each finished seed's wall time as a stacked bar of its phases (other: the rest of the wall time), with the bar's line. */
export function timesSvg(t) {
  const rows = t.rows.filter((r) => r.finished && r.wallSeconds !== null);
  const w = 170 + 56 * Math.max(rows.length, 1);
  const h = 300;
  const [top, bottom, left] = [30, 40, 50];
  const maxS = Math.max(t.bar.minutes * 60 * 1.25, ...rows.map((r) => r.wallSeconds));
  const y = (sec) => top + (1 - sec / maxS) * (h - top - bottom);
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="11">`, `<text x="${left}" y="16">wall time per seed by phase (minutes); dashed: the ${t.bar.minutes}-minute bar</text>`];
  for (let m = 0; m * 60 <= maxS; m += 2) parts.push(`<line x1="${left}" x2="${w - 120}" y1="${y(m * 60)}" y2="${y(m * 60)}" stroke="#eee"/><text x="${left - 6}" y="${y(m * 60) + 4}" text-anchor="end">${m}</text>`);
  rows.forEach((r, i) => {
    const x = left + 20 + 56 * i;
    const p = r.phases ?? {};
    const known = Object.values(p).reduce((a, v) => a + v, 0);
    let at = 0;
    for (const [name, sec] of [...Object.entries(p), ["other", Math.max(0, r.wallSeconds - known)]]) {
      if (sec <= 0) continue;
      parts.push(`<rect x="${x}" y="${y(at + sec)}" width="36" height="${y(at) - y(at + sec)}" fill="${PHASE_COLORS[name] ?? "#999"}"><title>${PHASE_LABELS[name] ?? name} ${sec.toFixed(0)} s</title></rect>`);
      at += sec;
    }
    parts.push(`<text x="${x + 18}" y="${h - 22}" text-anchor="middle">seed ${r.seed}</text>`, `<text x="${x + 18}" y="${h - 8}" text-anchor="middle">${(r.wallSeconds / 60).toFixed(1)}</text>`);
  });
  parts.push(`<line x1="${left}" x2="${w - 120}" y1="${y(t.bar.minutes * 60)}" y2="${y(t.bar.minutes * 60)}" stroke="#d1242f" stroke-dasharray="5,3"/>`);
  Object.entries(PHASE_COLORS).forEach(([name, color], i) => parts.push(`<rect x="${w - 112}" y="${top + 14 * i}" width="10" height="10" fill="${color}"/><text x="${w - 98}" y="${top + 9 + 14 * i}">${PHASE_LABELS[name] ?? name}</text>`));
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
  writeFileSync(join(values.root, "times.svg"), timesSvg(t));
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
