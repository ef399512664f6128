import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { UserError } from "../core/errors.js";
import { formatNumber } from "./escape.js";
import { chartsOfSeries } from "./chart-data.js";
import { readEvaluations } from "./evaluations.js";
import { renderReport } from "./html.js";
import { readMetrics } from "./metrics.js";

export interface WriteReportOptions {
  /** Metrics file (default `<runDir>/metrics.jsonl`). */
  metrics?: string;
  /** Output file (default `<runDir>/report.html`). */
  out?: string;
  title?: string;
  now?: Date;
}

export interface WriteReportResult {
  path: string;
  steps: number;
  series: number;
  /** Charts drawn (metric groups). */
  groups: number;
  skippedLines: number;
}

function flattenSummary(v: unknown, prefix: string, out: [string, string][]): void {
  if (v !== null && typeof v === "object" && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) flattenSummary(x, prefix ? `${prefix}.${k}` : k, out);
  } else if (typeof v === "number") out.push([prefix, formatNumber(v)]);
  else out.push([prefix, typeof v === "string" ? v : JSON.stringify(v)]);
}

/**
 * Writes `<runDir>/report.html` from `<runDir>/metrics.jsonl` (plus `config.yaml` and `summary.json` when present).
 * Safe to call after every step: the page is written to a temporary file and renamed into place.
 */
export function writeReport(runDir: string, options: WriteReportOptions = {}): WriteReportResult {
  const dir = resolve(runDir);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UserError("run_dir_not_found", `run directory ${runDir} does not exist`);
  const metricsPath = options.metrics ?? join(dir, "metrics.jsonl");
  const metrics = existsSync(metricsPath) ? readMetrics(metricsPath) : null;
  const charts = metrics ? chartsOfSeries(metrics.series) : [];
  const configPath = join(dir, "config.yaml");
  const config = existsSync(configPath) ? readFileSync(configPath, "utf8") : null;
  let summary: [string, string][] | null = null;
  const summaryPath = join(dir, "summary.json");
  if (existsSync(summaryPath)) {
    summary = [];
    try {
      flattenSummary(JSON.parse(readFileSync(summaryPath, "utf8")) as unknown, "", summary);
    } catch (e) {
      summary = [["summary.json", `unreadable: ${e instanceof Error ? e.message : String(e)}`]];
    }
  }
  const html = renderReport({ title: options.title ?? `harnessrl run ${basename(dir)}`, generatedAt: options.now ?? new Date(), metrics, charts, config, summary, evaluations: readEvaluations(dir) });
  const out = options.out ?? join(dir, "report.html");
  const tmp = `${out}.${process.pid}.tmp`;
  writeFileSync(tmp, html);
  renameSync(tmp, out);
  return { path: out, steps: metrics?.stepRows ?? 0, series: metrics?.series.length ?? 0, groups: charts.length, skippedLines: metrics?.skippedLines ?? 0 };
}
