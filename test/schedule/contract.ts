import { describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import type { HarnessScheduler } from "../../src/schedule/index.js";
import { SeededStream } from "../../src/schedule/rng.js";

export const SKETCH_DIM = 16;

/** Synthetic but varied observations: learnability and a sketch that depend on the harness and the step. */
export function observe(harness: string, step: number): { harness: string; learnability: number; sketch: number[] } {
  const rng = new SeededStream(step * 31 + harness.length * 7 + harness.charCodeAt(0));
  return { harness, learnability: step % 5 === 0 ? 0 : rng.next(), sketch: Array.from({ length: SKETCH_DIM }, () => rng.next() - 0.5) };
}

/** Runs steps [from, to): next → update → log; returns each step's choice and log. */
export function drive(s: HarnessScheduler, from: number, to: number): { harness: string; probabilities: Record<string, number>; log: Record<string, number> }[] {
  const out = [];
  for (let step = from; step < to; step++) {
    const c = s.next(step);
    s.update(observe(c.harness, step));
    out.push({ harness: c.harness, probabilities: c.probabilities, log: s.log() });
  }
  return out;
}

/** The suite every scheduler passes. `make(harnesses, seed)` builds a fresh scheduler. */
export function schedulerContract(name: string, make: (harnesses: readonly string[], seed: number) => HarnessScheduler): void {
  describe(`scheduler contract: ${name}`, () => {
    const hs = ["claude-code", "codex", "pi"];

    it("picks a listed harness each step with probabilities that sum to 1 and include the pick", () => {
      const s = make(hs, 1);
      expect(s.name).toBe(name);
      for (const r of drive(s, 0, 200)) {
        expect(hs).toContain(r.harness);
        const ps = hs.map((h) => r.probabilities[h] ?? -1);
        for (const p of ps) expect(p).toBeGreaterThanOrEqual(0);
        expect(Math.abs(ps.reduce((a, b) => a + b, 0) - 1)).toBeLessThan(1e-9);
        expect(r.probabilities[r.harness]).toBeGreaterThan(0);
      }
    });

    it("logs every harness's probability, pick and visits as flat numbers", () => {
      const s = make(hs, 2);
      const runs = drive(s, 0, 30);
      const last = runs[runs.length - 1]!.log;
      expect(last["sched/step"]).toBe(29);
      expect(hs.reduce((a, h) => a + (last[`sched/prob/${h}`] ?? 0), 0)).toBeCloseTo(1, 9);
      expect(hs.reduce((a, h) => a + (last[`sched/pick/${h}`] ?? 0), 0)).toBe(1);
      expect(hs.reduce((a, h) => a + (last[`sched/visits/${h}`] ?? 0), 0)).toBe(30);
      for (const v of Object.values(last)) expect(Number.isFinite(v)).toBe(true);
      expect(JSON.parse(JSON.stringify(last))).toEqual(last);
    });

    it("is deterministic for a seed", () => {
      const a = drive(make(hs, 5), 0, 100);
      const b = drive(make(hs, 5), 0, 100);
      expect(b).toEqual(a);
    });

    it("resumes exactly from state() through JSON", () => {
      const straight = make(hs, 9);
      drive(straight, 0, 40);
      const saved = JSON.stringify(straight.state());
      const logAtSave = straight.log();
      const rest = drive(straight, 40, 140);
      const resumed = make(hs, 12345); // the seed comes back with the state
      resumed.restore(JSON.parse(saved));
      expect(resumed.log()).toEqual(logAtSave);
      expect(drive(resumed, 40, 140)).toEqual(rest);
    });

    it("refuses a state for another harness list, another scheduler or garbage, and keeps its own", () => {
      const s = make(hs, 3);
      drive(s, 0, 10);
      const before = JSON.stringify(s.state());
      const other = make(["claude-code", "codex"], 3).state();
      expect(() => s.restore(other)).toThrow(UserError);
      expect(() => s.restore({ ...s.state(), scheduler: "nope" })).toThrow(/not "/);
      expect(() => s.restore({ hello: 1 })).toThrow(UserError);
      expect(() => s.restore(null)).toThrow(UserError);
      expect(JSON.stringify(s.state())).toBe(before);
    });

    it("rejects unknown harnesses, bad learnability and bad harness lists with UserErrors", () => {
      const s = make(hs, 1);
      expect(() => s.update({ harness: "aider", learnability: 0.1 })).toThrow(UserError);
      expect(() => s.update({ harness: "pi", learnability: Number.POSITIVE_INFINITY })).toThrow(UserError);
      expect(() => s.next(-1)).toThrow(UserError);
      expect(() => make([], 1)).toThrow(UserError);
      expect(() => make(["a", "a"], 1)).toThrow(/twice/);
    });

    it("works with a single harness", () => {
      const s = make(["only"], 1);
      for (const r of drive(s, 0, 10)) {
        expect(r.harness).toBe("only");
        expect(r.probabilities.only).toBeCloseTo(1, 12);
      }
    });
  });
}

