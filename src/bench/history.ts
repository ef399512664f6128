// Entry point: `node dist/bench/history.js [--quick]` measures the store's durable inserts and the history
// planner over a long session, and writes docs/bench/history-store.md. Wiring only.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { defaultCodec } from "../chat/codec.js";
import { runStoreBench } from "./store.js";
import { runPlannerBench } from "./history-planner.js";

const quick = process.argv.includes("--quick");
const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const store = runStoreBench(quick ? 300 : 2000, 4096);
const planner = runPlannerBench(defaultCodec(), quick ? 50 : 200, quick ? [1, 10, 50] : [1, 10, 50, 100, 150, 200]);

const lines = [
  "# Store and history planner benchmark",
  "",
  `Run ${new Date().toISOString()} on ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}.`,
  "Regenerate with `npm run build && node dist/bench/history.js`. On a shared machine the tails (p99) mostly measure",
  "other processes; the medians are the useful numbers.",
  "",
  "## Durable insert of one call record (4,096 prompt tokens, ~16 kB raw request)",
  "",
  "| store | records | p50 µs | p99 µs | mean µs | inserts/s |",
  "| --- | ---: | ---: | ---: | ---: | ---: |",
  ...store.map((r) => `| ${r.store} | ${r.records} | ${r.p50Us} | ${r.p99Us} | ${r.meanUs} | ${r.insertsPerSecond} |`),
  "",
  "## Planning one call of a long session (12 tools, ~7k-character system prompt, one tool call per turn)",
  "",
  "`plan` = the planner's whole work for a request (one render, prefix check, token splice, encoding the new suffix);",
  "`remember` = indexing the finished call (rendering it once with its response). `render` and `encode all` show what",
  "rendering and re-tokenising the whole prompt would cost for comparison. Medians.",
  "",
  "| call | prompt tokens | plan µs | remember µs | render µs | encode all µs |",
  "| ---: | ---: | ---: | ---: | ---: | ---: |",
  ...planner.map((r) => `| ${r.call} | ${r.promptTokens} | ${r.planUs} | ${r.rememberUs} | ${r.renderUs} | ${r.encodeAllUs} |`),
  "",
];
const out = join(root, "docs", "bench", "history-store.md");
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, lines.join("\n"));
console.log(lines.join("\n"));
console.log(`written to ${out}`);
