import { escapeHtml, formatNumber } from "./escape.js";
import type { ChartGroup } from "./groups.js";
import type { MetricsFile } from "./metrics.js";
import { PALETTE, lineChart } from "./svg-chart.js";

export interface ReportPage {
  title: string;
  generatedAt: Date;
  metrics: MetricsFile | null;
  groups: ChartGroup[];
  /** Raw text of config.yaml, if the run has one. */
  config: string | null;
  /** Flattened summary.json (name → value), if the run has one. */
  summary: [string, string][] | null;
}

const CSS = `body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1380px;padding:16px 24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:4px 0}h2{font-size:16px;margin:0 0 6px}.meta{color:#666;font-size:13px}
nav{margin:10px 0;font-size:13px;line-height:1.8}nav a{margin-right:12px;color:#1f5fa6;text-decoration:none}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(660px,1fr));gap:16px}
.chart{background:#fff;border:1px solid #ddd;border-radius:6px;padding:10px}
.chart svg{max-width:100%;height:auto}
.legend{list-style:none;padding:0;margin:6px 0 0;font-size:12px;columns:2}
.legend li{break-inside:avoid;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:middle}
table{border-collapse:collapse;font-size:13px;background:#fff}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}pre{background:#fff;border:1px solid #ddd;padding:10px;overflow:auto;font-size:12px}
section{margin:18px 0}`;

function chartSection(g: ChartGroup, m: MetricsFile): string {
  const legend = g.series
    .map((s, i) => {
      const last = m.latest.get(s.name);
      const value = last ? ` = ${escapeHtml(formatNumber(last.y))}` : "";
      return `<li><span class="sw" style="background:${PALETTE[i % PALETTE.length]}"></span>${escapeHtml(s.name)}${value}</li>`;
    })
    .join("");
  return `<div class="chart" id="${escapeHtml(g.id)}"><h2>${escapeHtml(g.title)}</h2>${lineChart(g.series, { title: g.title })}<ul class="legend">${legend}</ul></div>`;
}

function latestTable(m: MetricsFile): string {
  const rows = [...m.latest].sort((a, b) => a[0].localeCompare(b[0]));
  const body = rows.map(([name, v]) => `<tr><td>${escapeHtml(name)}</td><td class="num">${escapeHtml(formatNumber(v.x))}</td><td class="num">${escapeHtml(formatNumber(v.y))}</td></tr>`).join("");
  return `<table><thead><tr><th>metric</th><th>step</th><th>latest</th></tr></thead><tbody>${body}</tbody></table>`;
}

/** The whole report as one HTML document: inline CSS and SVG only, no scripts, nothing fetched. */
export function renderReport(p: ReportPage): string {
  const m = p.metrics;
  const steps = m ? m.rows.length : 0;
  const meta = [`generated ${escapeHtml(p.generatedAt.toISOString())}`, `${steps} logged steps`];
  if (m && m.skippedLines > 0) meta.push(`${m.skippedLines} unreadable line(s) skipped`);
  const out: string[] = [];
  out.push(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">`);
  out.push(`<title>${escapeHtml(p.title)}</title><style>${CSS}</style></head><body>`);
  out.push(`<h1>${escapeHtml(p.title)}</h1><div class="meta">${meta.join(" · ")}</div>`);
  if (p.groups.length > 0) out.push(`<nav>${p.groups.map((g) => `<a href="#${escapeHtml(g.id)}">${escapeHtml(g.title)}</a>`).join("")}<a href="#latest">latest values</a><a href="#config">config</a></nav>`);
  if (p.summary) {
    const body = p.summary.map(([k, v]) => `<tr><td>${escapeHtml(k)}</td><td class="num">${escapeHtml(v)}</td></tr>`).join("");
    out.push(`<section id="summary"><h2>Summary</h2><table><tbody>${body}</tbody></table></section>`);
  }
  if (!m || m.series.length === 0) out.push(`<section><p>No numeric metrics logged yet.</p></section>`);
  else {
    out.push(`<section class="charts">${p.groups.map((g) => chartSection(g, m)).join("")}</section>`);
    out.push(`<section id="latest"><h2>Latest values</h2>${latestTable(m)}</section>`);
  }
  out.push(`<section id="config"><h2>Config</h2>${p.config === null ? "<p>No config.yaml in the run directory.</p>" : `<pre>${escapeHtml(p.config)}</pre>`}</section>`);
  out.push(`</body></html>\n`);
  return out.join("\n");
}
