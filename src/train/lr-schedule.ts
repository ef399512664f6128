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
