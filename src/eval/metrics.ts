import type { RolloutResult } from "../tasks/rollout-result.js";

/**
 * Unbiased pass@k from n samples with c passes (Chen et al., 2021): 1 − C(n−c, k) / C(n, k), computed as a product
 * to stay exact for large n.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (k <= 0 || n <= 0) return 0;
  if (k > n) k = n;
  if (n - c < k) return 1;
  let miss = 1;
  for (let i = n - c + 1; i <= n; i++) miss *= 1 - k / i;
  return 1 - miss;
}

export interface GroupMetrics {
  rollouts: number;
  /** Rollouts excluded as infrastructure failures. */
  infraErrors: number;
  tasks: number;
  passAt1: number;
  /**
   * Standard error of passAt1: the sample std of the per-(task, harness) pass rates over √groups. It is what the
   * number's noise is when the same policy is evaluated again on other draws. Compare two evaluations with
   * passChange (paired when they ran the same groups).
   */
  passAt1Stderr: number;
  passAtK: number;
  k: number;
  meanScore: number;
  /** Mean F1 over tasks that report one (lookup QA), else null. */
  f1: number | null;
  statuses: Record<string, number>;
  /**
   * Pass rate per (task, harness) group, keyed `taskId/harness`: what a later evaluation of the same tasks is paired
   * with (pairedChange).
   */
  groupRates: Record<string, number>;
  /**
   * (task, harness) groups of the evaluation whose every rollout was an infrastructure error, keyed like
   * `groupRates`: planned, but with no rate. With them, `groupRates` tells which groups an evaluation planned.
   */
  lostGroups: string[];
}

export interface EvalSummary {
  k: number;
  overall: GroupMetrics;
  byHarness: Record<string, GroupMetrics>;
  byFamily: Record<string, GroupMetrics>;
  byHarnessFamily: Record<string, GroupMetrics>;
  /** The common-random-numbers key its rollouts were sampled with (src/proxy/sampling-seeds.ts); absent: random seeds. */
  samplingSeeds?: string;
}

function f1Of(r: RolloutResult): number | null {
  const sub = r.verifier?.subscores.f1;
  return typeof sub === "number" ? sub : null;
}

/** Metrics of a group of rollouts: per task, pass@1 is the mean pass rate and pass@k the unbiased estimate. */
export function groupMetrics(results: readonly RolloutResult[], k: number, passThreshold = 1): GroupMetrics {
  const statuses: Record<string, number> = {};
  for (const r of results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  const valid = results.filter((r) => r.status !== "infra_error");
  const planned = new Set(results.map((r) => `${r.taskId}/${r.harness}`));
  const byTask = new Map<string, RolloutResult[]>();
  for (const r of valid) {
    const key = `${r.taskId}\u0000${r.harness}`;
    const list = byTask.get(key) ?? [];
    list.push(r);
    byTask.set(key, list);
  }
  let pk = 0;
  const rates: number[] = [];
  const groupRates: Record<string, number> = {};
  for (const [key, list] of byTask) {
    const c = list.filter((r) => r.score >= passThreshold).length;
    rates.push(c / list.length);
    groupRates[key.replace("\u0000", "/")] = c / list.length;
    pk += passAtK(list.length, c, k);
  }
  const groups = byTask.size;
  const mean = groups ? rates.reduce((s, v) => s + v, 0) / groups : 0;
  const variance = groups > 1 ? rates.reduce((s, v) => s + (v - mean) ** 2, 0) / (groups - 1) : 0;
  const f1s = valid.map(f1Of).filter((v): v is number => v !== null);
  return {
    rollouts: results.length,
    infraErrors: results.length - valid.length,
    tasks: new Set(valid.map((r) => r.taskId)).size,
    passAt1: mean,
    passAt1Stderr: groups > 1 ? Math.sqrt(variance / groups) : 0,
    passAtK: groups ? pk / groups : 0,
    k,
    meanScore: valid.length ? valid.reduce((s, r) => s + r.score, 0) / valid.length : 0,
    f1: f1s.length ? f1s.reduce((s, v) => s + v, 0) / f1s.length : null,
    statuses,
    groupRates,
    lostGroups: [...planned].filter((k) => !(k in groupRates)).sort(),
  };
}

/** after − before on pass@1 with its standard error; `paired` says which kind of standard error it is. */
export interface PassChange {
  change: number;
  stderr: number;
  /** change / stderr (0 when the standard error is 0). */
  z: number;
  /**
   * True: both evaluations ran the same (task, harness) groups and the standard error is that of the mean per-group
   * difference (sample std of the differences over √pairs), which removes the spread of task difficulty that both
   * share. False: √(se₁² + se₂²) of two independent evaluations.
   */
  paired: boolean;
  /** Groups compared: the shared groups when paired, else both evaluations' groups. */
  groups: number;
  /**
   * Paired only: groups both evaluations planned but left out of the pairs because one of them lost every rollout of
   * the group to infrastructure errors (their rates exist in one evaluation only). 0 when the pairs are the whole plan.
   */
  dropped: number;
}

function meanAndStderr(values: readonly number[]): { mean: number; stderr: number } {
  const n = values.length;
  if (n === 0) return { mean: 0, stderr: 0 };
  const mean = values.reduce((s, v) => s + v, 0) / n;
  const variance = n > 1 ? values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1) : 0;
  return { mean, stderr: n > 1 ? Math.sqrt(variance / n) : 0 };
}

/** What passChange reads of an evaluation's metrics (a summary file read back may lack `lostGroups`: older files). */
export type PairableMetrics = Pick<GroupMetrics, "passAt1" | "passAt1Stderr" | "groupRates"> & { lostGroups?: string[] };

/** Every group an evaluation planned: those with a rate and those lost to infrastructure errors. */
function plannedGroups(m: PairableMetrics): Set<string> {
  // Summaries written before `lostGroups` existed have none: their planned groups are the rated ones.
  return new Set([...Object.keys(m.groupRates), ...(m.lostGroups ?? [])]);
}

/**
 * The change from `before` to `after`. Paired when both evaluations planned the same groups (the quickstart evaluates
 * one held-out suite before and after RL): the mean per-group difference over the groups both rated, with a group
 * that one of them lost entirely to infrastructure errors left out and counted (`dropped`), so one lost rollout does
 * not turn the comparison into two independent ones. Evaluations of different groups (other tasks or harnesses) are
 * treated as independent: a paired figure is never computed on an overlap that was not planned as such.
 */
export function passChange(before: PairableMetrics, after: PairableMetrics): PassChange {
  const plan = plannedGroups(before);
  const other = plannedGroups(after);
  const samePlan = plan.size === other.size && [...plan].every((k) => other.has(k));
  const shared = [...plan].filter((k) => k in before.groupRates && k in after.groupRates);
  if (samePlan && shared.length > 1) {
    const { mean, stderr } = meanAndStderr(shared.map((k) => (after.groupRates[k] ?? 0) - (before.groupRates[k] ?? 0)));
    return { change: mean, stderr, z: stderr > 0 ? mean / stderr : 0, paired: true, groups: shared.length, dropped: plan.size - shared.length };
  }
  const change = after.passAt1 - before.passAt1;
  const stderr = Math.sqrt(before.passAt1Stderr ** 2 + after.passAt1Stderr ** 2);
  return { change, stderr, z: stderr > 0 ? change / stderr : 0, paired: false, groups: Object.keys(before.groupRates).length + Object.keys(after.groupRates).length, dropped: 0 };
}

function groupBy(results: readonly RolloutResult[], key: (r: RolloutResult) => string): Map<string, RolloutResult[]> {
  const out = new Map<string, RolloutResult[]>();
  for (const r of results) {
    const k = key(r);
    const list = out.get(k) ?? [];
    list.push(r);
    out.set(k, list);
  }
  return out;
}

export function summarise(results: readonly RolloutResult[], k: number, passThreshold = 1): EvalSummary {
  const by = (key: (r: RolloutResult) => string): Record<string, GroupMetrics> =>
    Object.fromEntries([...groupBy(results, key)].sort(([a], [b]) => a.localeCompare(b)).map(([name, list]) => [name, groupMetrics(list, k, passThreshold)]));
  return {
    k,
    overall: groupMetrics(results, k, passThreshold),
    byHarness: by((r) => r.harness),
    byFamily: by((r) => r.family),
    byHarnessFamily: by((r) => `${r.harness}/${r.family}`),
  };
}

function pct(v: number): string {
  return `${(100 * v).toFixed(1)}%`.padStart(7);
}

/** A terminal table: one row per harness × family, then per harness, per family and overall. */
export function formatSummary(s: EvalSummary): string {
  const rows: [string, GroupMetrics][] = [...Object.entries(s.byHarnessFamily), ...Object.entries(s.byHarness).map(([h, m]) => [`${h} (all)`, m] as [string, GroupMetrics]), ...Object.entries(s.byFamily).map(([f, m]) => [`(all)/${f}`, m] as [string, GroupMetrics]), ["overall", s.overall]];
  const width = Math.max(20, ...rows.map(([n]) => n.length));
  const head = `${"group".padEnd(width)}  rollouts  pass@1  pass@${s.k}`.padEnd(width + 27) + "  score     F1  infra";
  const lines = rows.map(([name, m]) => `${name.padEnd(width)}  ${String(m.rollouts).padStart(8)} ${pct(m.passAt1)} ${pct(m.passAtK)}  ${m.meanScore.toFixed(3).padStart(5)} ${m.f1 === null ? "     -" : m.f1.toFixed(3).padStart(6)}  ${String(m.infraErrors).padStart(5)}`);
  return [head, ...lines].join("\n");
}
