// Prints the mix-harness results table from the four arms' eval-before/after files (markdown).
import { readFileSync } from "node:fs";

const arms = ["single", "mixed", "round-robin", "harness-bandit"];
const harnesses = ["chat-agent", "resp-agent", "claw-agent", "central-agent"];
const pct = (v) => (v === undefined ? "–" : `${(100 * v).toFixed(1)}`);
const lines = [`| arm | ${harnesses.map((h) => `${h}${h === "central-agent" ? " (held out)" : ""}`).join(" | ")} | chat + resp + claw mean | steps |`, `| --- |${harnesses.map(() => " --- |").join("")} --- | --- |`];
for (const arm of arms) {
  const dir = `runs/exp-mix-${arm}`;
  const before = JSON.parse(readFileSync(`${dir}/eval-before.json`, "utf8"));
  const after = JSON.parse(readFileSync(`${dir}/eval-after.json`, "utf8"));
  const summary = JSON.parse(readFileSync(`${dir}/summary.json`, "utf8"));
  const cells = harnesses.map((h) => `${pct(before.byHarness[h]?.passAt1)} → ${pct(after.byHarness[h]?.passAt1)}`);
  const trained = ["chat-agent", "resp-agent", "claw-agent"].filter((h) => after.byHarness[h]);
  const meanOf = (e) => trained.reduce((s, h) => s + (e.byHarness[h]?.passAt1 ?? 0), 0) / trained.length;
  lines.push(`| ${arm} | ${cells.join(" | ")} | ${pct(meanOf(before))} → ${pct(meanOf(after))} | ${summary.steps} |`);
}
console.log(lines.join("\n"));
