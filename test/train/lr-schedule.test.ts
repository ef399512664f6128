import { describe, expect, it } from "vitest";
import { lrAt, lrScheduleSchema, timeFitHorizon } from "../../src/train/lr-schedule.js";

describe("learning-rate schedules", () => {
  it("constant without warm-up is the base rate at every step", () => {
    const s = lrScheduleSchema.parse({});
    for (const step of [1, 5, 100]) expect(lrAt(0.01, s, step, 100)).toBe(0.01);
  });

  it("warm-up ramps linearly from base / warmup_steps to base", () => {
    const s = lrScheduleSchema.parse({ warmup_steps: 4 });
    expect([1, 2, 3, 4, 5].map((k) => lrAt(1, s, k, 10))).toEqual([0.25, 0.5, 0.75, 1, 1]);
  });

  it("cosine decays from base after warm-up to min_ratio × base at the last step (hand-computed midpoint)", () => {
    const s = lrScheduleSchema.parse({ warmup_steps: 2, decay: "cosine", min_ratio: 0.2 });
    expect(lrAt(1, s, 2, 12)).toBe(1);
    // step 7 of 12: t = (7 − 2) / 10 = 0.5 → 0.2 + 0.8 · 0.5 · (1 + cos(π/2)) = 0.6
    expect(lrAt(1, s, 7, 12)).toBeCloseTo(0.6, 12);
    expect(lrAt(1, s, 12, 12)).toBeCloseTo(0.2, 12);
    // Steps past the planned total (a resumed run with a larger budget) stay at the floor.
    expect(lrAt(1, s, 20, 12)).toBeCloseTo(0.2, 12);
  });

  it("linear decays in equal steps", () => {
    const s = lrScheduleSchema.parse({ decay: "linear", min_ratio: 0 });
    expect([0, 1, 2, 3, 4].map((k) => lrAt(2, s, k, 4))).toEqual([2, 1.5, 1, 0.5, 0]);
  });

  it("rejects unknown keys and out-of-range values", () => {
    expect(() => lrScheduleSchema.parse({ decay: "step" })).toThrow();
    expect(() => lrScheduleSchema.parse({ min_ratio: 2 })).toThrow();
    expect(() => lrScheduleSchema.parse({ warmup: 3 })).toThrow();
  });

  it("a time-capped SFT of 216 planned 40 s steps (the first 70 s) in 1800 s: the fitted horizon is the 45 steps that run, and the last one ends the decay", () => {
    const s = lrScheduleSchema.parse({ warmup_steps: 3, decay: "cosine", min_ratio: 0.1 });
    const deadline = 1800_000;
    let horizon = 216;
    let clock = 0;
    let step = 0;
    const rates: number[] = [];
    while (clock < deadline) {
      // Timed from the end of the first step, which pays a 30 s warm-up on top (as warm-start.ts does).
      const stepMs = step >= 2 ? (clock - 70_000) / (step - 1) : undefined;
      horizon = timeFitHorizon({ planned: 216, previous: horizon, done: step, stepMs, remainingMs: deadline - clock });
      step++;
      rates.push(lrAt(0.01, s, step, horizon));
      clock += step === 1 ? 70_000 : 40_000;
    }
    expect(step).toBe(45);
    expect(horizon).toBe(45);
    expect(rates.at(-1)).toBeCloseTo(0.001, 12);
    // Without fitting, the same 45 steps end at 92 % of the base rate: the cap cuts the schedule almost at its top.
    expect(lrAt(0.01, s, 45, 216)).toBeGreaterThan(0.009);
    for (let i = 4; i < rates.length; i++) expect(rates[i]!).toBeLessThanOrEqual(rates[i - 1]!);
  });

  it("the fitted horizon never grows back after a slow step, never exceeds the plan and never falls below the next step", () => {
    // 10 steps done at 10 s each, 50 s left: 5 more fit → 15.
    expect(timeFitHorizon({ planned: 100, previous: 100, done: 10, stepMs: 10_000, remainingMs: 50_000 })).toBe(15);
    // Faster steps later would fit more, but the earlier, smaller horizon holds.
    expect(timeFitHorizon({ planned: 100, previous: 15, done: 11, stepMs: 5_000, remainingMs: 49_000 })).toBe(15);
    expect(timeFitHorizon({ planned: 12, previous: 12, done: 2, stepMs: 1_000, remainingMs: 1_000_000 })).toBe(12);
    expect(timeFitHorizon({ planned: 100, previous: 100, done: 10, stepMs: 10_000, remainingMs: 0 })).toBe(11);
    // No step timed yet, or no deadline: the plan.
    expect(timeFitHorizon({ planned: 100, previous: 100, done: 1, stepMs: undefined, remainingMs: 5_000 })).toBe(100);
    expect(timeFitHorizon({ planned: 100, previous: 100, done: 3, stepMs: 10_000, remainingMs: Infinity })).toBe(100);
  });
});
