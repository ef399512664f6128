import { parseArgs } from "node:util";
import { UserError, errorMessage } from "../../core/errors.js";
import type { Command } from "../command.js";
import { writeReport } from "../../report/write.js";

const usage = `Usage:
  harnessrl report RUN_DIR [--metrics FILE] [--out FILE] [--title TEXT]

Writes RUN_DIR/report.html from RUN_DIR/metrics.jsonl: one self-contained page (no network: the dashboard's uPlot
chart code and the data are inlined; opens from file://) with a chart per metric group (reward, pass@1 per harness, KL / mismatch, entropy, throughput, loss, the
warm start's SFT NLL and learning rate, and any other numeric series grouped by name prefix), tables of the finished
evaluations, the warm start's summary and the latest values, and summary.json and config.yaml when present.

Options:
  --metrics FILE  metrics JSONL to read (default RUN_DIR/metrics.jsonl)
  --out FILE      where to write the page (default RUN_DIR/report.html)
  --title TEXT    page title`;

async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, strict: true, allowPositionals: true, options: { metrics: { type: "string" }, out: { type: "string" }, title: { type: "string" } } });
  } catch (e) {
    throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
  }
  const [dir, ...rest] = parsed.positionals;
  if (dir === undefined || rest.length > 0) throw new UserError("invalid_arguments", `report needs exactly one RUN_DIR\n\n${usage}`);
  const opts: Parameters<typeof writeReport>[1] = {};
  if (parsed.values.metrics !== undefined) opts.metrics = parsed.values.metrics;
  if (parsed.values.out !== undefined) opts.out = parsed.values.out;
  if (parsed.values.title !== undefined) opts.title = parsed.values.title;
  const r = writeReport(dir, opts);
  console.log(`wrote ${r.path}: ${r.steps} steps, ${r.series} series in ${r.groups} charts${r.skippedLines ? `, ${r.skippedLines} unreadable line(s) skipped` : ""}`);
  return 0;
}

export const reportCommand: Command = { name: "report", summary: "write a run's HTML report (charts of its metrics)", usage, run };
