// Prints the CAPO / multi-agent results table (markdown) from the four arms' eval and metrics files.
import { existsSync, readFileSync } from "node:fs";

const arms = ["grpo-joint", "grpo-central", "capo-joint", "capo-central"];
const pct = (v) => (v === undefined || v === null ? "–" : (100 * v).toFixed(1));
const f3 = (v) => (v === undefined || v === null ? "–" : v.toFixed(3));
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : undefined);
const lines = [
  "| arm | F1 before → after | pass@1 before → after (%) | change (points ± se) | steps | mean capo/grad_cosine |",
  "| --- | --- | --- | --- | --- | --- |",
];
for (const arm of arms) {
  const dir = `runs/exp-capo-${arm}`;
  if (!existsSync(`${dir}/summary.json`)) {
    lines.push(`| ${arm} | not run | | | | |`);
    continue;
  }
  const before = JSON.parse(readFileSync(`${dir}/eval-before.json`, "utf8")).byHarness["central-agent"];
  const after = JSON.parse(readFileSync(`${dir}/eval-after.json`, "utf8")).byHarness["central-agent"];
  const summary = JSON.parse(readFileSync(`${dir}/summary.json`, "utf8"));
  const metrics = readFileSync(`${dir}/metrics.jsonl`, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const cos = mean(metrics.map((m) => m["capo/grad_cosine"]).filter((v) => typeof v === "number"));
  const d = summary.delta;
  const change = d ? `${(100 * d.overall).toFixed(1)} ± ${(100 * d.stderr).toFixed(1)}` : "–";
  lines.push(`| ${arm} | ${f3(before?.f1)} → ${f3(after?.f1)} | ${pct(before?.passAt1)} → ${pct(after?.passAt1)} | ${change} | ${summary.steps} | ${f3(cos)} |`);
}
console.log(lines.join("\n"));

// Seeds (experiments/capo-central/seeds.sh): the arms again with run seeds 1, 2, …; seed 0 is the run above.
const runsOf = (arm) => [`runs/exp-capo-${arm}`, ...[1, 2, 3, 4].map((s) => `runs/exp-capo-${arm}-s${s}`)].filter((d) => existsSync(`${d}/summary.json`));
const sd = (xs) => {
  const m = mean(xs);
  return xs.length < 2 ? 0 : Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
};
// Every "before" evaluates the same warm-start checkpoint (only the evaluation's sampling differs by seed), so the
// reference for every arm is their pooled mean; an arm's own "before" is one noisy draw of it.
const all = arms.flatMap((arm) => runsOf(arm).map((d) => ({ arm, d })));
const beforeOf = (d) => JSON.parse(readFileSync(`${d}/eval-before.json`, "utf8")).byHarness["central-agent"];
const afterOf = (d) => JSON.parse(readFileSync(`${d}/eval-after.json`, "utf8")).byHarness["central-agent"];
const start = mean(all.map(({ d }) => beforeOf(d).passAt1));
const seedLines = [
  `Pooled start (all ${all.length} "before" evaluations of the warm start): ${pct(start)} %.`,
  "",
  "| arm | seeds | pass@1 after (%) per seed | mean after (%) ± sd over seeds | after − pooled start (points) | rollouts | mean capo/grad_cosine |",
  "| --- | ---: | --- | --- | ---: | ---: | ---: |",
];
for (const arm of arms) {
  const dirs = runsOf(arm);
  if (dirs.length < 2) continue;
  const after = dirs.map((d) => 100 * afterOf(d).passAt1);
  const cos = mean(dirs.flatMap((d) => readFileSync(`${d}/metrics.jsonl`, "utf8").trim().split("\n").map((l) => JSON.parse(l)["capo/grad_cosine"]).filter((v) => typeof v === "number")));
  const rollouts = dirs.reduce((n, d) => n + afterOf(d).rollouts, 0);
  seedLines.push(`| ${arm} | ${dirs.length} | ${after.map((x) => x.toFixed(1)).join(", ")} | ${mean(after).toFixed(1)} ± ${sd(after).toFixed(1)} | ${(mean(after) - 100 * start).toFixed(1)} | ${rollouts} | ${f3(cos)} |`);
}
if (seedLines.length > 4) console.log(`\n${seedLines.join("\n")}`);
