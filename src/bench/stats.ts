/** Latency statistics shared by the benchmarks: nearest-rank percentiles over the samples. */

export interface LatencySummary {
  n: number;
  p50: number;
  p99: number;
  mean: number;
}

/** The p-th percentile (0–100) of ascending `sorted` by nearest rank; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** The lower median (the middle value, or the lower of the two middle ones); NaN when empty. */
export function median(samples: readonly number[]): number {
  return [...samples].sort((a, b) => a - b)[Math.floor((samples.length - 1) / 2)] ?? NaN;
}

export function latencySummary(samples: readonly number[]): LatencySummary {
  const s = [...samples].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), mean: s.reduce((a, b) => a + b, 0) / s.length };
}
