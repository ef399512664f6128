import { describe, expect, it } from "vitest";
import { NllWindow } from "../../src/train/nll-window.js";

describe("the warm start's stop_at_nll window", () => {
  it("stops only once a full epoch of steps has a mean at or below the target", () => {
    const w = new NllWindow(3);
    // One lucky first row must not stop SFT: the window is not full yet.
    expect(w.push(0.001)).toBeCloseTo(0.001);
    expect(w.reached(0.01)).toBe(false);
    w.push(0.5);
    w.push(0.02);
    expect(w.mean()).toBeCloseTo((0.001 + 0.5 + 0.02) / 3);
    expect(w.reached(0.01)).toBe(false);
    // The window slides: the 0.001 and 0.5 rows leave it.
    w.push(0.004);
    w.push(0.006);
    expect(w.size).toBe(3);
    expect(w.mean()).toBeCloseTo(0.01);
    expect(w.reached(0.01)).toBe(true);
    expect(w.reached(0.009)).toBe(false);
  });

  it("never stops without a target", () => {
    const w = new NllWindow(1);
    w.push(0);
    expect(w.reached(undefined)).toBe(false);
    expect(new NllWindow(2).mean()).toBeNaN();
  });
});
