// Results of experiments/real-harness-scaling/run.mjs as markdown tables (and table.json beside plan.json):
//   node experiments/real-harness-scaling/table.mjs [--root runs/real-scaling]
// Every number carries its standard error. A cell pools all seeds' evaluation rollouts; a change is paired over the
// same (seed, task) groups: an arm against its own seed's warm start, or two arms against each other (both start from
// the same warm start and are evaluated on the same tasks), so task difficulty cancels.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

/** Pass rates per (task, harness) group of one evaluation file, for one harness. */
export function groupRates(evalFile, harness) {
  const rates = evalFile?.byHarness?.[harness]?.groupRates;
  return rates && typeof rates === "object" ? rates : {};
}

/** Mean and standard error of pooled per-group rates (one sample per group: the binomial error). */
export function pooled(rateLists) {
  const xs = rateLists.flat();
  const n = xs.length;
  if (n === 0) return { n, mean: null, se: null };
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const varS = n > 1 ? xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1) : 0;
  return { n, mean, se: Math.sqrt(varS / n) };
}

/** Paired change b − a over the groups both have: mean, standard error of the per-group differences, z. */
export function pairedChange(pairs) {
  const n = pairs.length;
  if (n === 0) return { n, mean: null, se: null, z: null };
  const d = pairs.map(([a, b]) => b - a);
  const mean = d.reduce((s, x) => s + x, 0) / n;
  const se = n > 1 ? Math.sqrt(d.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1) / n) : 0;
  return { n, mean, se, z: se > 0 ? mean / se : null };
}

function pairs(a, b) {
  const out = [];
  for (const [key, x] of Object.entries(a)) if (typeof b[key] === "number" && typeof x === "number") out.push([x, b[key]]);
  return out;
}

const pct = (v) => (v === null ? "–" : (100 * v).toFixed(1));
const cell = (p) => (p.mean === null ? "–" : `${pct(p.mean)} ± ${pct(p.se)} (${p.n})`);
const change = (c) => (c.mean === null ? "–" : `${c.mean >= 0 ? "+" : ""}${pct(c.mean)} ± ${pct(c.se)}${c.z !== null && Math.abs(c.z) >= 2 ? " **" : ""}`);

// Comparisons the experiment asks about, on the held-out harness (skipped when an arm did not run).
const QUESTIONS = [
  ["two", "one", "2 training harnesses vs 1"],
  ["four-mixed", "two", "4 training harnesses vs 2 (mixed)"],
  ["four-mixed", "one", "4 training harnesses vs 1 (mixed)"],
  ["four-bandit", "four-mixed", "HarnessBandit vs mixed batches"],
  ["four-bandit", "four-round-robin", "HarnessBandit vs round-robin"],
  ["four-bandit", "four-uniform", "HarnessBandit vs uniform"],
  ["four-bandit-probe", "four-bandit", "HarnessBandit with the held-out harness as a probe vs without"],
];

export function buildTables(root) {
  const plan = JSON.parse(readFileSync(join(root, "plan.json"), "utf8"));
  const harnesses = [...plan.train, plan.heldOut];
  const read = (seed, arm, which) => {
    const path = join(root, `s${seed}`, arm, `eval-${which}.json`);
    return existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : null;
  };
  // Group rates keyed by seed and task, so pairs never cross seeds.
  const keyed = (evalFile, seed, h) => Object.fromEntries(Object.entries(groupRates(evalFile, h)).map(([k, v]) => [`s${seed}:${k}`, v]));
  const warm = Object.fromEntries(harnesses.map((h) => [h, Object.assign({}, ...plan.seeds.map((s) => keyed(read(s, "warm", "before"), s, h)))]));
  const after = {};
  for (const arm of plan.arms) {
    after[arm] = Object.fromEntries(
      harnesses.map((h) => [h, Object.assign({}, ...plan.seeds.map((s) => keyed(read(s, arm, "after"), s, h)))]),
    );
  }
  const rows = plan.arms.map((arm) => ({
    arm,
    seeds: plan.seeds.filter((s) => read(s, arm, "after") !== null),
    cells: Object.fromEntries(
      harnesses.map((h) => [h, { after: pooled([Object.values(after[arm][h])]), change: pairedChange(pairs(warm[h], after[arm][h])) }]),
    ),
  }));
  const warmRow = Object.fromEntries(harnesses.map((h) => [h, pooled([Object.values(warm[h])])]));
  const questions = QUESTIONS.filter(([a, b]) => plan.arms.includes(a) && plan.arms.includes(b)).map(([a, b, label]) => ({
    label,
    a,
    b,
    change: pairedChange(pairs(after[b][plan.heldOut], after[a][plan.heldOut])),
  }));
  return { plan, harnesses, warm: warmRow, rows, questions };
}

export function renderTables(t) {
  const head = (h) => (h === t.plan.heldOut ? `${h} (held out)` : h);
  const lines = [
    `Pass@1 (%) after RL, pooled over seeds ${t.plan.seeds.join(", ")} (± standard error, evaluation rollouts), and the change from the same seed's warm start (paired; ** = at least 2 standard errors).`,
    "",
    `| arm | seeds run | ${t.harnesses.map(head).join(" | ")} |`,
    `| --- | --- |${t.harnesses.map(() => " --- |").join("")}`,
    `| warm start | ${t.plan.seeds.length} | ${t.harnesses.map((h) => cell(t.warm[h])).join(" | ")} |`,
  ];
  for (const r of t.rows) {
    lines.push(`| ${r.arm} | ${r.seeds.length} | ${t.harnesses.map((h) => `${cell(r.cells[h].after)}; ${change(r.cells[h].change)}`).join(" | ")} |`);
  }
  if (t.questions.length) {
    lines.push("", `On the held-out harness (${t.plan.heldOut}), paired over the same (seed, task) groups:`, "", "| question | difference (points) | z | groups |", "| --- | --- | --- | --- |");
    for (const q of t.questions) {
      const z = q.change.z === null ? "–" : q.change.z.toFixed(2);
      lines.push(`| ${q.label} (${q.a} − ${q.b}) | ${change(q.change)} | ${z} | ${q.change.n} |`);
    }
  }
  return lines.join("\n");
}

function main() {
  const { values } = parseArgs({ options: { root: { type: "string", default: "runs/real-scaling" } } });
  const tables = buildTables(values.root);
  writeFileSync(join(values.root, "table.json"), `${JSON.stringify(tables, null, 2)}\n`);
  console.log(renderTables(tables));
}

if (import.meta.url === `file://${process.argv[1]}`) main();
