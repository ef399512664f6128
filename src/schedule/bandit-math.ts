import { InfraError } from "../core/errors.js";
/** The pure arithmetic of HarnessBandit, each piece tested against hand-computed fixtures (test/schedule). */

/** Below this spread a window is degenerate: every value normalises to 0.5 (no information to rank by). */
export const DEGENERATE_SPREAD = 1e-12;

/**
 * Min-max normalisation of `value` against the window's values, clamped to [0, 1] (a value from an older window may lie
 * outside the current range). An empty window or one whose max − min ≤ DEGENERATE_SPREAD gives 0.5.
 */
export function minMaxNormalise(value: number, window: readonly number[]): number {
  if (window.length === 0) return 0.5;
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of window) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  const spread = hi - lo;
  if (!(spread > DEGENERATE_SPREAD)) return 0.5;
  return Math.min(1, Math.max(0, (value - lo) / spread));
}

/** f = (w_ℓ·ℓ̂ + w_τ·τ̂) / (w_ℓ + w_τ): weights are relative, so f stays in [0, 1] and the temperature keeps its meaning. */
export function fuse(learnNorm: number, transferNorm: number, learnWeight: number, transferWeight: number): number {
  const total = learnWeight + transferWeight;
  if (!(total > 0)) throw new InfraError("internal", "fusion weights must sum to a positive number");
  return (learnWeight * learnNorm + transferWeight * transferNorm) / total;
}

/**
 * τ from its two parts: (1 − w)·τ_train + w·τ_probe when both exist, else the one that exists (null when neither);
 * w = 0 ignores the probes entirely.
 */
export function combineTransfer(train: number | null, probe: number | null, probeWeight: number): number | null {
  if (probe === null || probeWeight === 0) return train;
  if (train === null) return probe;
  return (1 - probeWeight) * train + probeWeight * probe;
}

/** UCB-style bonus c·sqrt(ln(t + 1) / (n + 1)); t = observations so far (all harnesses), n = observations of this harness. */
export function explorationBonus(c: number, t: number, n: number): number {
  return c * Math.sqrt(Math.log(t + 1) / (n + 1));
}

/** Numerically stable softmax of logits / temperature. */
export function softmax(logits: readonly number[], temperature = 1): number[] {
  if (logits.length === 0) return [];
  const scaled = logits.map((l) => l / temperature);
  const m = Math.max(...scaled);
  const e = scaled.map((s) => Math.exp(s - m));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
}

/** p = (1 − K·p_min)·q + p_min: every entry ≥ p_min and the sum stays 1. Requires K·p_min ≤ 1. */
export function withFloor(q: readonly number[], pMin: number): number[] {
  const k = q.length;
  if (pMin < 0 || k * pMin > 1 + 1e-12) throw new InfraError("internal", `probability floor ${pMin} is infeasible for ${k} harnesses (need K·p_min ≤ 1)`);
  const mass = Math.max(0, 1 - k * pMin);
  return q.map((x) => mass * x + pMin);
}

export function norm(v: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += (v[i] ?? 0) ** 2;
  return Math.sqrt(s);
}

/** Cosine similarity; 0 when either vector is zero (no direction to agree with). */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new InfraError("internal", `cosine of vectors of different lengths (${a.length} vs ${b.length})`);
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += (a[i] ?? 0) * (b[i] ?? 0);
  const na = norm(a);
  const nb = norm(b);
  return na > 0 && nb > 0 ? dot / (na * nb) : 0;
}
