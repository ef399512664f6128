import { describe, expect, it } from "vitest";
import { NllWindow } from "../../src/train/nll-window.js";
import { sftStopReason } from "../../src/train/sft-stop.js";

describe("the warm start's stopping rules (stop_at_nll, stop_at_demo_prob)", () => {
  it("stops at the reproduction-probability target once the figure exists, not before", () => {
    const w = new NllWindow(2);
    w.push(3);
    // Before every demonstration went through a step the figure is NaN: no stop, whatever the target.
    expect(sftStopReason({ demoProb: 0.01 }, w, Number.NaN)).toBeUndefined();
    expect(sftStopReason({ demoProb: 0.4 }, w, 0.39)).toBeUndefined();
    expect(sftStopReason({ demoProb: 0.4 }, w, 0.4)).toBe("demo_prob");
    expect(sftStopReason({ demoProb: 0.4 }, w, 0.7)).toBe("demo_prob");
  });

  it("checks the NLL target first when both are set, and neither without targets", () => {
    const w = new NllWindow(2);
    w.push(0.01);
    w.push(0.01);
    expect(sftStopReason({ nll: 0.02, demoProb: 0.4 }, w, 0.5)).toBe("nll");
    expect(sftStopReason({ nll: 0.005, demoProb: 0.4 }, w, 0.5)).toBe("demo_prob");
    expect(sftStopReason({ nll: 0.005, demoProb: 0.6 }, w, 0.5)).toBeUndefined();
    expect(sftStopReason({}, w, 0.99)).toBeUndefined();
  });
});
