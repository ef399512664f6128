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
const seedLines = ["| arm | seeds | pass@1 after (%) per seed | mean after (%) | mean change (points) ± sd over seeds | pooled after (rollouts) |", "| --- | ---: | --- | ---: | --- | ---: |"];
const pooled = {};
for (const arm of arms) {
  const dirs = runsOf(arm);
  if (dirs.length < 2) continue;
  const after = dirs.map((d) => JSON.parse(readFileSync(`${d}/eval-after.json`, "utf8")).byHarness["central-agent"]);
  const before = dirs.map((d) => JSON.parse(readFileSync(`${d}/eval-before.json`, "utf8")).byHarness["central-agent"]);
  const changes = after.map((a, i) => 100 * (a.passAt1 - before[i].passAt1));
  const n = after.reduce((s, a) => s + (a.rollouts ?? a.n ?? 0), 0);
  pooled[arm] = mean(after.map((a) => a.passAt1));
  seedLines.push(`| ${arm} | ${dirs.length} | ${after.map((a) => pct(a.passAt1)).join(", ")} | ${pct(pooled[arm])} | ${mean(changes).toFixed(1)} ± ${sd(changes).toFixed(1)} | ${n || "–"} |`);
}
if (seedLines.length > 2) console.log(`\n${seedLines.join("\n")}`);
