// Prints the mix-harness results table (markdown) from the four arms' eval-before/after files, plus pooled rows.
import { existsSync, readFileSync } from "node:fs";

// The probe arm (claw-agent probed, never trained) is optional: its row appears once it has run.
const arms = ["single", "mixed", "round-robin", "harness-bandit", ...(existsSync("runs/exp-mix-harness-bandit-probe/eval-after.json") ? ["harness-bandit-probe"] : [])];
const RL = ["chat-agent", "resp-agent"];
// claw-agent: in the warm start's demonstrations, never sampled by RL; central-agent: never trained on at all.
const HELD_OUT = ["claw-agent", "central-agent"];
const harnesses = [...RL, ...HELD_OUT];
const pct = (v) => (v === undefined ? "–" : `${(100 * v).toFixed(1)}`);
const load = (arm, which) => JSON.parse(readFileSync(`runs/exp-mix-${arm}/eval-${which}.json`, "utf8"));
const meanOf = (e, hs) => hs.reduce((s, h) => s + (e.byHarness[h]?.passAt1 ?? 0), 0) / hs.length;
const lines = [
  `| arm | ${harnesses.map((h) => (HELD_OUT.includes(h) ? `${h} (held out)` : h)).join(" | ")} | RL harnesses' mean | steps | harnesses trained (steps) |`,
  `| --- |${harnesses.map(() => " --- |").join("")} --- | --- | --- |`,
];
const pooledBefore = Object.fromEntries(harnesses.map((h) => [h, 0]));
for (const arm of arms) {
  const before = load(arm, "before");
  const after = load(arm, "after");
  const summary = JSON.parse(readFileSync(`runs/exp-mix-${arm}/summary.json`, "utf8"));
  const metrics = readFileSync(`runs/exp-mix-${arm}/metrics.jsonl`, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const visits = {};
  for (const m of metrics) {
    if (typeof m.step !== "number" || m.step < 1) continue;
    // The harnesses a step sampled through report their pass rate in it.
    const hs = RL.filter((h) => typeof m[`pass1/${h}`] === "number");
    for (const h of hs) visits[h] = (visits[h] ?? 0) + 1;
  }
  for (const h of harnesses) pooledBefore[h] += (before.byHarness[h]?.passAt1 ?? 0) / arms.length;
  const cells = harnesses.map((h) => `${pct(before.byHarness[h]?.passAt1)} → ${pct(after.byHarness[h]?.passAt1)}`);
  lines.push(`| ${arm} | ${cells.join(" | ")} | ${pct(meanOf(before, RL))} → ${pct(meanOf(after, RL))} | ${summary.steps} | ${Object.entries(visits).map(([h, n]) => `${h} ${n}`).join(", ") || "–"} |`);
}
lines.push(`| warm start, pooled over the ${arms.length} "before" evaluations | ${harnesses.map((h) => pct(pooledBefore[h])).join(" | ")} | ${pct(RL.reduce((s, h) => s + pooledBefore[h], 0) / RL.length)} | 0 | |`);
console.log(lines.join("\n"));
