/**
 * The keys a run's rollouts derive their sampling seeds from (src/proxy/sampling-seeds.ts). Evaluations share one key
 * per run seed, so before and after RL draw common random numbers; training rollouts (with `sampling.seeded`) get a
 * key per step, so a task drawn again in a later pass over the task stream samples afresh, and probes their own.
 */
export function evalSeedKey(runSeed: number): string {
  return `eval-seed-${runSeed}`;
}

export function trainingSeedKey(runSeed: number, step: number, kind: "train" | "probe"): string {
  return `${kind}-seed-${runSeed}-step-${step}`;
}
