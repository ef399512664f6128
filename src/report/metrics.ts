import { readFileSync } from "node:fs";

/** One numeric series from metrics.jsonl: (x, y) points in file order; x = `step` when present, else the line number. */
export interface Series {
  name: string;
  points: [number, number][];
}

/** A row that sums up a phase instead of logging a step (the warm start's): shown as a table, never charted. */
export interface PhaseSummary {
  phase: string;
  values: [string, number][];
}

export interface MetricsFile {
  /** Parsed step objects in file order. */
  rows: Record<string, unknown>[];
  /** Rows of SUMMARY_PHASES, in file order (not in `series` or `latest`). */
  summaries: PhaseSummary[];
  /** Distinct `step` values logged outside summaries (RL steps; a mid-run evaluation shares its step's) and SFT steps. */
  stepRows: number;
  sftRows: number;
  series: Series[];
  /** Lines that were not a JSON object (a run killed mid-write leaves a torn last line). */
  skippedLines: number;
  /** The last finite value of every series. */
  latest: Map<string, { x: number; y: number }>;
}

/** Nested objects are flattened into `a/b` names so `{"pass1": {"codex": 0.5}}` and `{"pass1/codex": 0.5}` agree. */
function flatten(obj: Record<string, unknown>, prefix: string, out: Map<string, number>): void {
  for (const [k, v] of Object.entries(obj)) {
    const name = prefix ? `${prefix}/${k}` : k;
    if (typeof v === "number" && Number.isFinite(v)) out.set(name, v);
    else if (typeof v === "boolean") out.set(name, v ? 1 : 0);
    else if (v !== null && typeof v === "object" && !Array.isArray(v)) flatten(v as Record<string, unknown>, name, out);
  }
}

/**
 * Phases whose row is one summary of the phase (the warm start: demonstrations, SFT steps, final NLL, times): a single
 * point per name, which would chart as a dozen one-dot plots. The warm start's curve comes as `phase: "sft"` rows.
 */
export const SUMMARY_PHASES = new Set(["warm_start"]);

/** The x axis: `step` if numeric, else `optimizer_step`, else the line's index among parsed rows. */
const X_KEYS = ["step", "optimizer_step"];

/** Parses metrics JSONL text tolerantly: bad lines are counted and skipped, non-numeric fields ignored. */
export function parseMetrics(text: string): MetricsFile {
  const rows: Record<string, unknown>[] = [];
  let skippedLines = 0;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "") continue;
    try {
      const v: unknown = JSON.parse(line);
      if (v !== null && typeof v === "object" && !Array.isArray(v)) rows.push(v as Record<string, unknown>);
      else skippedLines++;
    } catch {
      skippedLines++;
    }
  }
  return metricsFromRows(rows, skippedLines);
}

/** Series and latest values of parsed metrics rows (the report and the live dashboard chart the same series). */
export function metricsFromRows(rows: Record<string, unknown>[], skippedLines = 0): MetricsFile {
  const byName = new Map<string, [number, number][]>();
  const summaries: PhaseSummary[] = [];
  const steps = new Set<number>();
  let sftRows = 0;
  rows.forEach((row, i) => {
    const values = new Map<string, number>();
    flatten(row, "", values);
    const phase = typeof row.phase === "string" ? row.phase : undefined;
    if (phase !== undefined && SUMMARY_PHASES.has(phase)) {
      summaries.push({ phase, values: [...values].filter(([name]) => !X_KEYS.includes(name)) });
      return;
    }
    if (phase === "sft") sftRows++;
    const step = values.get("step");
    if (step !== undefined) steps.add(step);
    const xKey = X_KEYS.find((k) => values.has(k));
    const x = xKey === undefined ? i : (values.get(xKey) as number);
    for (const [name, y] of values) {
      if (X_KEYS.includes(name)) continue;
      const pts = byName.get(name);
      if (pts) pts.push([x, y]);
      else byName.set(name, [[x, y]]);
    }
  });
  const series = [...byName].map(([name, points]) => ({ name, points }));
  const latest = new Map<string, { x: number; y: number }>();
  for (const s of series) {
    const last = s.points[s.points.length - 1];
    if (last) latest.set(s.name, { x: last[0], y: last[1] });
  }
  return { rows, summaries, stepRows: steps.size, sftRows, series, skippedLines, latest };
}

export function readMetrics(path: string): MetricsFile {
  return parseMetrics(readFileSync(path, "utf8"));
}
