import { NOT_CURVES, alignSeries, chartsOfSeries, colorsFor, metricsFromRows, type ChartData, type Series } from "../report/index.js";

export type { ChartData };

/**
 * The run page's charts from metrics rows: exactly report.html's charts (src/report/chart-data.ts: grouping, titles,
 * point cleaning, colours), drawn by the same browser code (src/report/static/charts.js).
 */
export function chartsOfRows(rows: Record<string, unknown>[]): ChartData[] {
  return chartsOfSeries(metricsFromRows(rows).series);
}

/** One metric of several runs on one chart (runs compared), aligned on step. */
export function compareChart(metric: string, runs: { id: string; rows: Record<string, unknown>[] }[]): ChartData {
  const series: Series[] = runs.map((r) => ({ name: r.id, points: metricsFromRows(r.rows).series.find((s) => s.name === metric)?.points ?? [] }));
  return { id: "compare", title: metric, names: series.map((s) => s.name), colors: colorsFor(series.length), ...alignSeries(series) };
}

/** Every numeric metric name of some rows (the compare chart's choices). */
export function metricNames(rows: Record<string, unknown>[]): string[] {
  return metricsFromRows(rows).series.map((s) => s.name).filter((n) => !NOT_CURVES.has(n)).sort();
}
