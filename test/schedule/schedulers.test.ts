import { describe, expect, it } from "vitest";
import { banditConfig, createScheduler, listSchedulers, parseSchedulerConfig } from "../../src/schedule/index.js";
import { schedulerContract, SKETCH_DIM, drive } from "./contract.js";

schedulerContract("round-robin", (hs) => createScheduler(parseSchedulerConfig({ name: "round-robin" }), hs));
schedulerContract("uniform", (hs, seed) => createScheduler(parseSchedulerConfig({ name: "uniform" }), hs, seed));
schedulerContract("harness-bandit", (hs, seed) => createScheduler(banditConfig({ sketch_dim: SKETCH_DIM }), hs, seed));

describe("scheduler registry and the simple schedulers", () => {
  it("lists the three built-in schedulers by name", () => {
    expect(listSchedulers().map((s) => s.name).sort()).toEqual(["harness-bandit", "round-robin", "uniform"]);
  });

  it("round-robin cycles in config order with one-hot probabilities", () => {
    const s = createScheduler({ name: "round-robin" }, ["a", "b", "c"]);
    expect(drive(s, 0, 7).map((r) => r.harness)).toEqual(["a", "b", "c", "a", "b", "c", "a"]);
    expect(s.next(7).probabilities).toEqual({ a: 0, b: 1, c: 0 });
  });

  it("uniform: p = 1/K, roughly equal frequencies, the config seed overrides the run seed", () => {
    const s = createScheduler({ name: "uniform" }, ["a", "b", "c", "d"], 4);
    const counts: Record<string, number> = {};
    for (const r of drive(s, 0, 4000)) {
      expect(r.probabilities.a).toBe(0.25);
      counts[r.harness] = (counts[r.harness] ?? 0) + 1;
    }
    // 4,000 draws at p = 0.25: σ of a frequency ≈ 0.0068; allow 0.03.
    for (const h of ["a", "b", "c", "d"]) expect(Math.abs((counts[h] ?? 0) / 4000 - 0.25)).toBeLessThan(0.03);
    const seq = (cfgSeed: number | undefined, runSeed: number): string[] =>
      drive(createScheduler(cfgSeed === undefined ? { name: "uniform" } : { name: "uniform", seed: cfgSeed }, ["a", "b", "c", "d"], runSeed), 0, 40).map((r) => r.harness);
    expect(seq(7, 1)).toEqual(seq(7, 2));
    expect(seq(undefined, 7)).toEqual(seq(7, 99));
    expect(seq(undefined, 1)).not.toEqual(seq(undefined, 2));
  });

  it("harness-bandit: another seed gives another sequence", () => {
    const run = (seed: number): string[] => drive(createScheduler(banditConfig({ sketch_dim: SKETCH_DIM }), ["a", "b", "c"], seed), 0, 60).map((r) => r.harness);
    expect(run(1)).not.toEqual(run(2));
  });
});
