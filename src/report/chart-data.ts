import type { Series } from "./metrics.js";
import { groupSeries } from "./groups.js";

/** Series colours, in series order (the dashboard and report.html agree on them). */
export const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

/**
 * One chart as the browser chart code (static/charts.js, uPlot) draws it: shared x values, one y column per series
 * (null: no point). The dashboard sends these as JSON; report.html embeds them.
 */
export interface ChartData {
  id: string;
  title: string;
  names: string[];
  colors: string[];
  x: number[];
  ys: (number | null)[][];
}

/**
 * Fields of a metrics row that are bookkeeping, not curves (a wall-clock timestamp charted over steps reads as noise;
 * an SFT row's epoch is a staircase over its optimizer steps).
 */
export const NOT_CURVES = new Set(["time", "policy_version", "epoch"]);

/** Points sorted by x; a step logged twice (a resumed run re-logs it) keeps its last value. */
export function cleanPoints(points: readonly [number, number][]): [number, number][] {
  const byX = new Map<number, number>();
  for (const [x, y] of points) if (Number.isFinite(x) && Number.isFinite(y)) byX.set(x, y);
  return [...byX].sort((a, b) => a[0] - b[0]);
}

export function colorsFor(n: number): string[] {
  return Array.from({ length: n }, (_, i) => PALETTE[i % PALETTE.length] as string);
}

/** Series aligned on the union of their x values, as uPlot wants them. */
export function alignSeries(series: readonly Series[]): { x: number[]; ys: (number | null)[][] } {
  const cleaned = series.map((s) => new Map(cleanPoints(s.points)));
  const xs = [...new Set(cleaned.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  return { x: xs, ys: cleaned.map((m) => xs.map((x) => m.get(x) ?? null)) };
}

/** A run's charts: its curves grouped (groups.ts), cleaned and aligned; the same for the dashboard and report.html. */
export function chartsOfSeries(all: readonly Series[]): ChartData[] {
  const series = all.filter((s) => !NOT_CURVES.has(s.name));
  return groupSeries(series).map((g) => ({ id: g.id, title: g.title, names: g.series.map((s) => s.name), colors: colorsFor(g.series.length), ...alignSeries(g.series) }));
}
