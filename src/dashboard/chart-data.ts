import { PALETTE, cleanPoints, groupSeries, metricsFromRows, type Series } from "../report/index.js";

/** One chart as the client draws it (uPlot's aligned columns): shared x values, one y column per series (null: no point). */
export interface ChartData {
  id: string;
  title: string;
  names: string[];
  /** The static report's colours, in series order. */
  colors: string[];
  x: number[];
  ys: (number | null)[][];
}

/** Fields of a metrics row that are bookkeeping, not curves (a wall-clock timestamp charted over steps reads as noise). */
const NOT_CURVES = new Set(["time", "policy_version"]);

function colorsFor(n: number): string[] {
  return Array.from({ length: n }, (_, i) => PALETTE[i % PALETTE.length] as string);
}

/** Series aligned on the union of their x values, as uPlot wants them. */
export function alignSeries(series: readonly Series[]): { x: number[]; ys: (number | null)[][] } {
  const cleaned = series.map((s) => new Map(cleanPoints(s.points)));
  const xs = [...new Set(cleaned.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  return { x: xs, ys: cleaned.map((m) => xs.map((x) => m.get(x) ?? null)) };
}

/**
 * The run page's charts from metrics rows: the static report's grouping (src/report/groups.ts) and point cleaning,
 * so both show the same curves under the same titles.
 */
export function chartsOfRows(rows: Record<string, unknown>[]): ChartData[] {
  const metrics = metricsFromRows(rows);
  const series = metrics.series.filter((s) => !NOT_CURVES.has(s.name));
  return groupSeries(series).map((g) => ({ id: g.id, title: g.title, names: g.series.map((s) => s.name), colors: colorsFor(g.series.length), ...alignSeries(g.series) }));
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
