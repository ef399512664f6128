import { escapeHtml, formatNumber } from "./escape.js";
import type { Series } from "./metrics.js";

export const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

export interface ChartOptions {
  width?: number;
  height?: number;
  /** Accessible title (also the SVG <title>). */
  title: string;
}

/** ~5 round tick values covering [lo, hi]. */
export function niceTicks(lo: number, hi: number, target = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / target;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag);
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : Number(v.toPrecision(12)));
  return out;
}

/** Points sorted by x; a step logged twice (a resumed run re-logs it) keeps its last value. */
export function cleanPoints(points: readonly [number, number][]): [number, number][] {
  const byX = new Map<number, number>();
  for (const [x, y] of points) if (Number.isFinite(x) && Number.isFinite(y)) byX.set(x, y);
  return [...byX].sort((a, b) => a[0] - b[0]);
}

/**
 * A self-contained SVG line chart (no scripts, no external resources): axes with round ticks, one polyline per series
 * (markers when there are few points), colours from PALETTE in series order.
 */
export function lineChart(series: readonly Series[], options: ChartOptions): string {
  const W = options.width ?? 640;
  const H = options.height ?? 260;
  const m = { l: 64, r: 16, t: 12, b: 36 };
  const data = series.map((s) => cleanPoints(s.points));
  const xs = data.flatMap((d) => d.map((p) => p[0]));
  const ys = data.flatMap((d) => d.map((p) => p[1]));
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${escapeHtml(options.title)}">`);
  parts.push(`<title>${escapeHtml(options.title)}</title>`);
  parts.push(`<rect x="0" y="0" width="${W}" height="${H}" fill="#fff"/>`);
  if (xs.length === 0) {
    parts.push(`<text x="${W / 2}" y="${H / 2}" text-anchor="middle" fill="#888" font-size="13">no data</text></svg>`);
    return parts.join("");
  }
  let x0 = Math.min(...xs);
  let x1 = Math.max(...xs);
  let y0 = Math.min(...ys);
  let y1 = Math.max(...ys);
  if (x1 === x0) {
    x0 -= 1;
    x1 += 1;
  }
  if (y1 === y0) {
    const pad = Math.abs(y0) > 0 ? Math.abs(y0) * 0.1 : 1;
    y0 -= pad;
    y1 += pad;
  } else {
    const pad = (y1 - y0) * 0.05;
    y0 -= pad;
    y1 += pad;
  }
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const sx = (x: number): number => m.l + ((x - x0) / (x1 - x0)) * pw;
  const sy = (y: number): number => m.t + ph - ((y - y0) / (y1 - y0)) * ph;
  const f = (v: number): string => v.toFixed(1);
  parts.push(`<g font-size="11" fill="#444" font-family="sans-serif">`);
  for (const t of niceTicks(y0, y1)) {
    parts.push(`<line x1="${m.l}" x2="${W - m.r}" y1="${f(sy(t))}" y2="${f(sy(t))}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${m.l - 6}" y="${f(sy(t) + 4)}" text-anchor="end">${escapeHtml(formatNumber(t))}</text>`);
  }
  for (const t of niceTicks(x0, x1, 6)) {
    parts.push(`<line x1="${f(sx(t))}" x2="${f(sx(t))}" y1="${m.t + ph}" y2="${m.t + ph + 4}" stroke="#444"/>`);
    parts.push(`<text x="${f(sx(t))}" y="${m.t + ph + 16}" text-anchor="middle">${escapeHtml(formatNumber(t))}</text>`);
  }
  parts.push(`<text x="${m.l + pw / 2}" y="${H - 4}" text-anchor="middle">step</text>`);
  parts.push(`</g>`);
  parts.push(`<rect x="${m.l}" y="${m.t}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  data.forEach((pts, i) => {
    const color = PALETTE[i % PALETTE.length] as string;
    const name = escapeHtml((series[i] as Series).name);
    const coords = pts.map(([x, y]) => `${f(sx(x))},${f(sy(y))}`).join(" ");
    parts.push(`<g class="series" data-name="${name}"><title>${name}</title>`);
    if (pts.length > 1) parts.push(`<polyline fill="none" stroke="${color}" stroke-width="1.8" points="${coords}"/>`);
    if (pts.length <= 60) for (const [x, y] of pts) parts.push(`<circle cx="${f(sx(x))}" cy="${f(sy(y))}" r="2.5" fill="${color}"/>`);
    parts.push(`</g>`);
  });
  parts.push(`</svg>`);
  return parts.join("");
}
