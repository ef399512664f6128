import { describe, expect, it } from "vitest";
import { lrAt, lrScheduleSchema } from "../../src/train/lr-schedule.js";

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
});
