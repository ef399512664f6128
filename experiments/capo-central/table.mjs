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
