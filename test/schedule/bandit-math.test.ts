import { describe, expect, it } from "vitest";
import { InfraError } from "../../src/core/errors.js";
import { cosine, explorationBonus, fuse, minMaxNormalise, softmax, withFloor } from "../../src/schedule/bandit-math.js";
import { SeededStream, sampleIndex } from "../../src/schedule/rng.js";

describe("HarnessBandit arithmetic (hand-computed fixtures)", () => {
  it("min-max normalises against the window and clamps values outside it", () => {
    expect(minMaxNormalise(0.4, [0.2, 0.6, 0.4])).toBeCloseTo(0.5, 12);
    expect(minMaxNormalise(0.2, [0.2, 0.6])).toBe(0);
    expect(minMaxNormalise(0.6, [0.2, 0.6])).toBe(1);
    expect(minMaxNormalise(-1, [0, 2, 1])).toBe(0);
    expect(minMaxNormalise(5, [0, 2, 1])).toBe(1);
    expect(minMaxNormalise(-0.3, [0, 0.7, -0.3])).toBe(0);
    expect(minMaxNormalise(0.25, [-1, 1])).toBeCloseTo(0.625, 12);
  });

  it("gives 0.5 for degenerate windows: empty, one value, all equal, spread below 1e-12", () => {
    expect(minMaxNormalise(3, [])).toBe(0.5);
    expect(minMaxNormalise(3, [3])).toBe(0.5);
    expect(minMaxNormalise(0, [0, 0, 0, 0])).toBe(0.5);
    expect(minMaxNormalise(1, [1, 1 + 1e-13])).toBe(0.5);
    expect(minMaxNormalise(1, [1, 1 + 1e-9])).toBe(0);
  });

  it("fuses with relative weights", () => {
    expect(fuse(1, 0.5, 0.5, 0.5)).toBeCloseTo(0.75, 12);
    expect(fuse(1, 0, 3, 1)).toBeCloseTo(0.75, 12);
    expect(fuse(0.2, 0.8, 1, 0)).toBeCloseTo(0.2, 12);
    expect(fuse(0.2, 0.8, 0, 2)).toBeCloseTo(0.8, 12);
    expect(() => fuse(0.2, 0.8, 0, 0)).toThrow(InfraError);
  });

  it("computes the UCB-style bonus c·sqrt(ln(t+1)/(n+1))", () => {
    expect(explorationBonus(1, 0, 0)).toBe(0); // ln 1 = 0
    expect(explorationBonus(1, 4, 2)).toBeCloseTo(0.732447, 6); // sqrt(ln 5 / 3) = sqrt(0.536479)
    expect(explorationBonus(2, 4, 1)).toBeCloseTo(1.794123, 5); // 2·sqrt(ln 5 / 2)
    expect(explorationBonus(0.5, 99, 9)).toBeCloseTo(0.5 * Math.sqrt(4.605170 / 10), 6);
    expect(explorationBonus(1, 100, 50)).toBeLessThan(explorationBonus(1, 100, 5)); // visits shrink it
  });

  it("softmax with temperature is stable for large logits", () => {
    const p = softmax([1.232447, 1.647061, 1.647061]);
    expect(p[0]).toBeCloseTo(0.248289, 5);
    expect(p[1]).toBeCloseTo(0.375856, 5);
    const hot = softmax([1000, 0], 1);
    expect(hot[0]).toBe(1);
    expect(hot[1]).toBe(0);
    const cool = softmax([1, 0], 10); // e^0.1 / (1 + e^0.1)
    expect(cool[0]).toBeCloseTo(0.524979, 6);
  });

  it("mixes in the floor so every entry is ≥ p_min and the sum stays 1", () => {
    const p = withFloor([1, 0, 0, 0], 0.1);
    expect(p).toEqual([0.7, 0.1, 0.1, 0.1].map((x) => expect.closeTo(x, 12) as unknown as number));
    expect(withFloor([0.5, 0.5], 0.5)).toEqual([0.5, 0.5]);
    expect(withFloor([0.2, 0.8], 0)).toEqual([0.2, 0.8]);
    expect(() => withFloor([0.5, 0.5, 0], 0.34)).toThrow(/K·p_min ≤ 1/);
    const q = softmax([3, -2, 0.5, 7, 7], 0.3);
    const floored = withFloor(q, 0.05);
    expect(floored.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    for (const x of floored) expect(x).toBeGreaterThanOrEqual(0.05);
  });

  it("cosine: hand values, scale invariance, zero vectors give 0", () => {
    expect(cosine([0.6, 0.8], [1, 0])).toBeCloseTo(0.6, 12);
    expect(cosine([3, 4], [0, 2])).toBeCloseTo(0.8, 12);
    expect(cosine([1, 2, 3], [-2, -4, -6])).toBeCloseTo(-1, 12);
    expect(cosine([0, 0], [1, 1])).toBe(0);
    expect(() => cosine([1], [1, 2])).toThrow(InfraError);
  });

  it("samples by cumulative probability and never picks a zero-probability entry", () => {
    expect(sampleIndex([0.2, 0.3, 0.5], 0)).toBe(0);
    expect(sampleIndex([0.2, 0.3, 0.5], 0.2)).toBe(1);
    expect(sampleIndex([0.2, 0.3, 0.5], 0.4999)).toBe(1);
    expect(sampleIndex([0.2, 0.3, 0.5], 0.9999999)).toBe(2);
    expect(sampleIndex([0.5, 0.5 - 1e-12, 0], 0.9999999999999)).toBe(1); // rounding falls to the last positive entry
    expect(sampleIndex([0, 1, 0], 0)).toBe(1);
  });

  it("the seeded stream is reproducible and resumable from its state", () => {
    const a = new SeededStream(42);
    const first = [a.next(), a.next(), a.next()];
    const b = new SeededStream(42);
    expect([b.next(), b.next(), b.next()]).toEqual(first);
    const c = new SeededStream(0);
    c.state = a.state;
    expect(c.next()).toBe(a.next());
    expect(new SeededStream(43).next()).not.toBe(first[0]);
  });
});
