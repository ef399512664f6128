/**
 * Harness schedulers for "scheduled" mix-harness training: one harness per optimizer step. The orchestrator asks
 * `next(step)` for the harness to train on, trains on that harness's rollouts, then reports what it saw with
 * `update(...)`. `log()` gives the step's flat metrics (merged into metrics.jsonl); `state()` / `restore()` carry the
 * scheduler across a resume exactly (plain JSON, stored with the checkpoint's `extra`).
 */

/** The choice for one optimizer step. */
export interface SchedulerChoice {
  step: number;
  harness: string;
  /** Probability with which each harness could have been chosen this step (sums to 1). */
  probabilities: Record<string, number>;
  /** The scheduler's per-harness scores, when it has any (HarnessBandit: fused score + exploration bonus). */
  scores?: Record<string, number>;
}

/** What the trainer saw after one optimizer step on `harness`. */
export interface SchedulerObservation {
  harness: string;
  /** Learnability: mean |advantage| over the step's batch (`adv/mean_abs`). Finite and ≥ 0. */
  learnability: number;
  /**
   * A sketch of the step's accumulated gradient (`trainer.gradSketch`, taken between forwardBackward and optimStep,
   * same dim and seed every step). Optional: without one the step's transferability is missing (neutral).
   */
  sketch?: Float32Array | readonly number[];
}

/**
 * A probe harness's gradient sketch: rollouts through a harness that is never trained on, turned into a batch like a
 * training step's and sketched without an optimizer step (the gradient is dropped). HarnessBandit compares training
 * steps' sketches with the probes' (docs/harness-bandit.md, "Probe harnesses").
 */
export interface ProbeObservation {
  harness: string;
  /** Same dim and seed as the training sketches; absent when the probe batch had no gradient (all advantages zero). */
  sketch?: Float32Array | readonly number[];
}

/** What the orchestrator runs for the probes: which harnesses, how often, how many rollouts. */
export interface ProbePlan {
  harnesses: readonly string[];
  /** Probe on steps 1, 1 + every, 1 + 2·every, … */
  every: number;
  /** The first `tasks` of the step's training tasks. */
  tasks: number;
  /** Samples per task; null: the run's `budget.samples`. */
  samples: number | null;
}

/** A scheduler's resumable state: JSON only, tagged with the scheduler's name and harness list. */
export interface SchedulerState {
  scheduler: string;
  version: number;
  harnesses: string[];
  [key: string]: unknown;
}

export interface HarnessScheduler {
  readonly name: string;
  readonly harnesses: readonly string[];
  /**
   * The `trainer.gradSketch` options whose sketch `update` expects (HarnessBandit), or null when the scheduler does not
   * use sketches (the orchestrator then skips the call).
   */
  readonly sketchOptions: { dim: number; seed: number } | null;
  /** Probe harnesses (never trained on) whose sketches `updateProbe` takes, or null when the scheduler has none. */
  readonly probes: ProbePlan | null;
  /** Reports a probe harness's sketch, taken at the same policy as the step's training sketch, before `update`. */
  updateProbe(observation: ProbeObservation): void;
  /** Picks the harness for optimizer step `step` (consumes randomness for random schedulers). */
  next(step: number): SchedulerChoice;
  /** Reports the step just trained. Unknown harnesses and non-finite signals are `UserError`s. */
  update(observation: SchedulerObservation): void;
  /** Everything needed to continue exactly as if never stopped. */
  state(): SchedulerState;
  /** Replaces the state with one from `state()` (validated: same scheduler and harness list). */
  restore(state: unknown): void;
  /**
   * The latest step's record as flat numeric metrics: `sched/prob/<h>`, `sched/pick/<h>`, `sched/visits/<h>` for every
   * scheduler, plus the scheduler's own signals (HarnessBandit: `bandit/...`). Call after `update` for the full record.
   */
  log(): Record<string, number>;
}
