import { z } from "zod";

/**
 * Learning-rate schedules. The rate is a pure function of the optimizer step, so resuming a run at step k (its state
 * records k) continues the schedule exactly; nothing schedule-related needs to be checkpointed beyond the step.
 */
export const lrScheduleSchema = z
  .strictObject({
    /** Linear ramp from 0 over the first steps (step 1 gets lr / warmup_steps). */
    warmup_steps: z.number().int().min(0).default(0),
    /** After warm-up: keep the rate, or decay it (cosine or linear) to `min_ratio` × lr at the last step. */
    decay: z.enum(["constant", "cosine", "linear"]).default("constant"),
    min_ratio: z.number().min(0).max(1).default(0.1),
  })
  .prefault({});

export type LrSchedule = z.infer<typeof lrScheduleSchema>;

/** The rate for optimizer step `step` (1-based) of `total`. */
export function lrAt(base: number, schedule: LrSchedule, step: number, total: number): number {
  if (schedule.warmup_steps > 0 && step <= schedule.warmup_steps) return (base * step) / schedule.warmup_steps;
  if (schedule.decay === "constant") return base;
  const span = Math.max(1, total - schedule.warmup_steps);
  const t = Math.min(1, Math.max(0, (step - schedule.warmup_steps) / span));
  const shape = schedule.decay === "cosine" ? 0.5 * (1 + Math.cos(Math.PI * t)) : 1 - t;
  return base * (schedule.min_ratio + (1 - schedule.min_ratio) * shape);
}

/**
 * The decay's horizon for a time-capped run (`warm_start.fit_schedule_to_time`): the optimizer steps that still start
 * before the deadline at `stepMs` per step, so the last step that fits ends the decay instead of a cap cutting the
 * schedule mid-way. Never above `planned` or `previous` (the rate never rises again after a slow step), never below the
 * step about to run. `done` steps have run; `remainingMs` are left; without a step time yet (`stepMs` undefined) or
 * without a deadline, the cap stands.
 */
export function timeFitHorizon(opts: { planned: number; previous: number; done: number; stepMs: number | undefined; remainingMs: number }): number {
  const { planned, previous, done, stepMs, remainingMs } = opts;
  const cap = Math.min(planned, previous);
  if (stepMs === undefined || !(stepMs > 0) || !Number.isFinite(remainingMs)) return cap;
  // Ceil: the loop starts a step whenever time is left, so the one that overruns the cap still runs.
  const fit = done + Math.ceil(Math.max(0, remainingMs) / stepMs);
  return Math.max(done + 1, Math.min(cap, fit));
}
