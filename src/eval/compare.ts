import { passChange, type PairableMetrics, type PassChange } from "./metrics.js";

/** One pass@1 comparison, B − A: the change with its standard error, and which way the shared groups moved. */
export interface GroupComparison extends PassChange {
  /** pass@1 of A and of B. */
  a: number;
  b: number;
  /** Paired only: shared (task, harness) groups whose pass rate rose from A to B, and those where it fell. */
  up: number;
  down: number;
}

/** Two evaluations compared overall and per harness (the harnesses both have). */
export interface EvalComparison {
  overall: GroupComparison;
  byHarness: Record<string, GroupComparison>;
  /**
   * Both evaluations sampled with the same common-random-numbers key: a group whose policy did not change draws the same
   * tokens in both, so the paired standard error holds only what differs between the policies. False when either
   * lacks a key or the keys differ: still paired by group when the plans match, but sampling noise is in the figure.
   */
  commonRandomNumbers: boolean;
  /** The key when both share it. */
  samplingSeeds?: string;
}

/** What `compareEvaluations` reads of an evaluation: its overall and per-harness metrics and its sampling key. */
export interface ComparableEvaluation {
  overall: PairableMetrics;
  byHarness: Record<string, PairableMetrics>;
  samplingSeeds?: string;
}

function compareGroups(a: PairableMetrics, b: PairableMetrics): GroupComparison {
  const change = passChange(a, b);
  let up = 0;
  let down = 0;
  if (change.paired) {
    for (const [key, rate] of Object.entries(a.groupRates)) {
      const other = b.groupRates[key];
      if (other === undefined) continue;
      if (other > rate) up++;
      else if (other < rate) down++;
    }
  }
  return { ...change, a: a.passAt1, b: b.passAt1, up, down };
}

/**
 * B − A on held-out pass@1, paired by (task, harness) group where both evaluations planned the same groups (passChange):
 * how two runs (say, two recipes resumed from one warm start) or a run's before and after compare. With the same
 * sampling key too, the comparison has common random numbers, the tightest the evaluation allows.
 */
export function compareEvaluations(a: ComparableEvaluation, b: ComparableEvaluation): EvalComparison {
  const byHarness: Record<string, GroupComparison> = {};
  for (const [harness, metrics] of Object.entries(a.byHarness).sort(([x], [y]) => x.localeCompare(y))) {
    const other = b.byHarness[harness];
    if (other !== undefined) byHarness[harness] = compareGroups(metrics, other);
  }
  const crn = a.samplingSeeds !== undefined && a.samplingSeeds === b.samplingSeeds;
  return { overall: compareGroups(a.overall, b.overall), byHarness, commonRandomNumbers: crn, ...(crn && a.samplingSeeds !== undefined ? { samplingSeeds: a.samplingSeeds } : {}) };
}

const points = (v: number): string => `${v >= 0 ? "+" : "−"}${Math.abs(100 * v).toFixed(1)}`;
const pct = (v: number): string => `${(100 * v).toFixed(1)} %`;

/** One line per comparison: A → B, the change ± its standard error (z), how it was paired and the groups' moves. */
export function formatComparison(c: EvalComparison, labels: { a: string; b: string }): string {
  const line = (name: string, g: GroupComparison): string => {
    const how = g.paired ? `paired over ${g.groups} groups${g.dropped ? ` (${g.dropped} lost to infrastructure errors left out)` : ""}, ${g.up} up, ${g.down} down` : `unpaired (the evaluations planned different groups)`;
    return `${name.padEnd(16)} ${pct(g.a).padStart(7)} → ${pct(g.b).padStart(7)}   ${points(g.change)} ± ${(100 * g.stderr).toFixed(1)} points (z ${g.z.toFixed(1)}; ${how})`;
  };
  const crn = c.commonRandomNumbers ? `common random numbers (key ${c.samplingSeeds ?? ""})` : "no common random numbers (different or missing sampling keys: sampling noise is in the difference)";
  return [`A: ${labels.a}`, `B: ${labels.b}`, `B − A, ${crn}:`, line("overall", c.overall), ...Object.entries(c.byHarness).map(([h, g]) => line(h, g))].join("\n");
}
