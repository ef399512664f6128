import { chartClient, scriptHash } from "./chart-client.js";
import type { ChartData } from "./chart-data.js";
import { escapeHtml, formatNumber } from "./escape.js";
import type { EvaluationRow } from "./evaluations.js";
import type { MetricsFile } from "./metrics.js";

export interface ReportPage {
  title: string;
  generatedAt: Date;
  metrics: MetricsFile | null;
  /** The charts to draw (chartsOfSeries of the metrics' series, chart-data.ts). */
  charts: ChartData[];
  /** Raw text of config.yaml, if the run has one. */
  config: string | null;
  /** Flattened summary.json (name → value), if the run has one. */
  summary: [string, string][] | null;
  /** Finished evaluations (eval-before.json, …), in order. */
  evaluations: EvaluationRow[];
}

const CSS = `body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1380px;padding:16px 24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:4px 0}h2{font-size:16px;margin:0 0 6px}.meta{color:#666;font-size:13px}
nav{margin:10px 0;font-size:13px;line-height:1.8}nav a{margin-right:12px;color:#1f5fa6;text-decoration:none}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(600px,1fr));gap:16px}
.chart{background:#fff;border:1px solid #ddd;border-radius:6px;padding:10px;min-width:0}
.chart-empty{color:#666;font-size:12px;padding:20px}
.u-legend{font-size:11px;line-height:1.2}.u-legend .u-series{padding:0 4px}.u-legend th{font-weight:500}
table:not(.u-legend){border-collapse:collapse;font-size:13px;background:#fff}table:not(.u-legend) td,table:not(.u-legend) th{border:1px solid #ddd;padding:3px 8px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}pre{background:#fff;border:1px solid #ddd;padding:10px;overflow:auto;font-size:12px}
section{margin:18px 0}`;

/**
 * Draws every `[data-chart]` element from the embedded data with the dashboard's chart module (inlined before this
 * text in the same module script). Fixed text, so the page's CSP can allow it by hash.
 */
const DRAW = `
const REPORT_CHARTS = JSON.parse(document.getElementById("report-charts").textContent);
for (const el of document.querySelectorAll("[data-chart]")) lineChart(el, REPORT_CHARTS[Number(el.dataset.chart)]);
`;

function scripts(): { uplot: string; charts: string } {
  const c = chartClient();
  return { uplot: c.uplotJs, charts: `${c.chartsJs}\n${DRAW}` };
}

/**
 * The report's Content-Security-Policy: nothing may be fetched, and only its two inline scripts (uPlot and the chart
 * code, by hash) may run; the data is JSON in a non-executable script element. The dashboard sends the same policy
 * when it serves a report.
 */
let csp: string | null = null;
export function reportCsp(): string {
  if (csp !== null) return csp;
  const s = scripts();
  csp = `default-src 'none'; script-src ${scriptHash(s.uplot)} ${scriptHash(s.charts)}; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'`;
  return csp;
}

/**
 * JSON safe inside a <script> element (no `</script>`, no `<!--`). Fractions keep 6 significant digits: plenty for a
 * chart and its hover legend, and about a third of the bytes of full doubles in a long run's report.
 */
function scriptJson(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (typeof x === "number" && !Number.isInteger(x) ? Number(x.toPrecision(6)) : x)).replace(/</g, "\\u003c");
}

/** Durations logged in milliseconds read better as seconds in a table. */
function summaryValue(name: string, v: number): string {
  return /Ms$/.test(name) ? `${formatNumber(v / 1000)} s` : formatNumber(v);
}

function summaryTables(m: MetricsFile): string {
  return m.summaries
    .map((s) => {
      const body = s.values.map(([name, v]) => `<tr><td>${escapeHtml(name)}</td><td class="num">${escapeHtml(summaryValue(name, v))}</td></tr>`).join("");
      return `<section id="phase-${escapeHtml(s.phase)}"><h2>${escapeHtml(s.phase === "warm_start" ? "Warm start" : s.phase)}</h2><table><tbody>${body}</tbody></table></section>`;
    })
    .join("");
}

const percent = (v: number): string => `${(100 * v).toFixed(1)} %`;

function evaluationsTable(rows: EvaluationRow[]): string {
  const harnesses = [...new Set(rows.flatMap((r) => r.byHarness.map(([h]) => h)))].sort();
  const head = ["evaluation", "rollouts", "pass@1", ...harnesses].map((h) => `<th>${escapeHtml(h)}</th>`).join("");
  const body = rows
    .map((r) => {
      const by = new Map(r.byHarness);
      const cells = [r.label, String(r.rollouts), r.stderr === null ? percent(r.passAt1) : `${percent(r.passAt1)} ± ${(100 * r.stderr).toFixed(1)}`, ...harnesses.map((h) => (by.has(h) ? percent(by.get(h) as number) : "–"))];
      return `<tr>${cells.map((c, i) => `<td${i > 0 ? ' class="num"' : ""}>${escapeHtml(c)}</td>`).join("")}</tr>`;
    })
    .join("");
  return `<section id="evaluations"><h2>Evaluations</h2><table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></section>`;
}

function latestTable(m: MetricsFile): string {
  const rows = [...m.latest].sort((a, b) => a[0].localeCompare(b[0]));
  const body = rows.map(([name, v]) => `<tr><td>${escapeHtml(name)}</td><td class="num">${escapeHtml(formatNumber(v.x))}</td><td class="num">${escapeHtml(formatNumber(v.y))}</td></tr>`).join("");
  return `<table><thead><tr><th>metric</th><th>step</th><th>latest</th></tr></thead><tbody>${body}</tbody></table>`;
}

/**
 * The whole report as one self-contained HTML document: the charts are drawn in the browser by the dashboard's own
 * chart code (uPlot and static/charts.js, inlined) from data embedded in the page; nothing is fetched.
 */
export function renderReport(p: ReportPage): string {
  const m = p.metrics;
  const charts = p.charts;
  const meta = [`generated ${escapeHtml(p.generatedAt.toISOString())}`, `${m ? m.stepRows : 0} logged steps`];
  if (m && m.sftRows > 0) meta.push(`${m.sftRows} warm-start SFT steps`);
  if (m && m.skippedLines > 0) meta.push(`${m.skippedLines} unreadable line(s) skipped`);
  const s = scripts();
  const out: string[] = [];
  out.push(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`);
  out.push(`<meta http-equiv="Content-Security-Policy" content="${escapeHtml(reportCsp())}">`);
  out.push(`<title>${escapeHtml(p.title)}</title><style>${chartClient().uplotCss}\n${CSS}</style></head><body>`);
  out.push(`<h1>${escapeHtml(p.title)}</h1><div class="meta">${meta.join(" · ")}</div>`);
  if (charts.length > 0) out.push(`<nav>${charts.map((g) => `<a href="#${escapeHtml(g.id)}">${escapeHtml(g.title)}</a>`).join("")}<a href="#latest">latest values</a><a href="#config">config</a></nav>`);
  if (p.summary) {
    const body = p.summary.map(([k, v]) => `<tr><td>${escapeHtml(k)}</td><td class="num">${escapeHtml(v)}</td></tr>`).join("");
    out.push(`<section id="summary"><h2>Summary</h2><table><tbody>${body}</tbody></table></section>`);
  }
  if (p.evaluations.length > 0) out.push(evaluationsTable(p.evaluations));
  if (m) out.push(summaryTables(m));
  if (!m || charts.length === 0) out.push(`<section><p>No numeric metrics logged yet.</p></section>`);
  else out.push(`<section class="charts">${charts.map((g, i) => `<div class="chart" id="${escapeHtml(g.id)}"><h2>${escapeHtml(g.title)}</h2><div data-chart="${i}"></div></div>`).join("")}</section>`);
  if (m && m.series.length > 0) out.push(`<section id="latest"><h2>Latest values</h2>${latestTable(m)}</section>`);
  out.push(`<section id="config"><h2>Config</h2>${p.config === null ? "<p>No config.yaml in the run directory.</p>" : `<pre>${escapeHtml(p.config)}</pre>`}</section>`);
  if (charts.length > 0) {
    out.push(`<script type="application/json" id="report-charts">${scriptJson(charts)}</script>`);
    out.push(`<script>${s.uplot}</script>`);
    out.push(`<script type="module">${s.charts}</script>`);
  }
  out.push(`</body></html>\n`);
  return out.join("\n");
}
