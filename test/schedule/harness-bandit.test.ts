import { describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { banditConfig, createScheduler, HarnessBanditScheduler, parseSchedulerConfig } from "../../src/schedule/index.js";
import type { HarnessScheduler } from "../../src/schedule/index.js";
import { SeededStream } from "../../src/schedule/rng.js";

const abc = ["a", "b", "c"];

function fixtureBandit(): HarnessBanditScheduler {
  const config = banditConfig({ window: 3, sketch_dim: 2, sketch_decay: 0.5, score_decay: 0.5, learn_weight: 0.5, transfer_weight: 0.5, temperature: 1, bonus: 1, p_min: 0.1 });
  return new HarnessBanditScheduler(abc, config, 7);
}

describe("HarnessBandit against a hand-computed run", () => {
  it("normalises, fuses, smooths and scores four updates as worked out by hand", () => {
    const s = fixtureBandit();
    // 1. a: ℓ 0.2, no peer sketch yet → τ missing (τ̂ 0.5); window [0.2] is degenerate → ℓ̂ 0.5; f 0.5.
    s.update({ harness: "a", learnability: 0.2, sketch: [1, 0] });
    let log = s.log();
    expect(log["bandit/learn_norm/a"]).toBe(0.5);
    expect(log["bandit/transfer_norm/a"]).toBe(0.5);
    expect(log["bandit/transfer/a"]).toBeUndefined();
    expect(log["bandit/score/a"]).toBe(0.5);
    expect(log["bandit/transfer_peers"]).toBe(0);
    // 2. b: ℓ 0.6 → ℓ̂ (0.6-0.2)/0.4 = 1; sketch [0,2] ⟂ a's EMA [1,0] → τ 0, window τ [0] degenerate → 0.5; f 0.75.
    s.update({ harness: "b", learnability: 0.6, sketch: [0, 2] });
    log = s.log();
    expect(log["bandit/learn_norm/b"]).toBeCloseTo(1, 12);
    expect(log["bandit/transfer/b"]).toBeCloseTo(0, 12);
    expect(log["bandit/transfer_norm/b"]).toBe(0.5);
    expect(log["bandit/score/b"]).toBeCloseTo(0.75, 12);
    // 3. c: ℓ 0.4 → ℓ̂ 0.5; unit sketch [0.6,0.8]: cos to a 0.6, to b 0.8, mean τ 0.7 = window max → τ̂ 1; f 0.75.
    s.update({ harness: "c", learnability: 0.4, sketch: [3, 4] });
    log = s.log();
    expect(log["bandit/transfer/c"]).toBeCloseTo(0.7, 12);
    expect(log["bandit/learn_norm/c"]).toBeCloseTo(0.5, 12);
    expect(log["bandit/transfer_norm/c"]).toBeCloseTo(1, 12);
    expect(log["bandit/fused/c"]).toBeCloseTo(0.75, 12);
    expect(log["bandit/transfer_peers"]).toBe(2);
    // 4. a again: the window (W = 3) drops a's first entry → ℓ [0.6, 0.4, 0.8] → ℓ̂ 1; sketch [0,-1]: cos to b -1,
    //    to c -0.8 → τ -0.9 = window min → τ̂ 0; f 0.5; score 0.5·0.5 + 0.5·0.5 = 0.5.
    s.update({ harness: "a", learnability: 0.8, sketch: [0, -1] });
    log = s.log();
    expect(log["bandit/window/size"]).toBe(3);
    expect(log["bandit/window/learn_min"]).toBeCloseTo(0.4, 12);
    expect(log["bandit/window/transfer_min"]).toBeCloseTo(-0.9, 12);
    expect(log["bandit/transfer/a"]).toBeCloseTo(-0.9, 12);
    expect(log["bandit/learn_norm/a"]).toBeCloseTo(1, 12);
    expect(log["bandit/transfer_norm/a"]).toBeCloseTo(0, 12);
    expect(log["bandit/score/a"]).toBeCloseTo(0.5, 12);
    expect(log["bandit/t"]).toBe(4);
    // Choice at t = 4, visits a 2, b 1, c 1: bonus sqrt(ln 5/3) = 0.732447 and sqrt(ln 5/2) = 0.897061;
    // logits 1.232447, 1.647061, 1.647061 → softmax 0.248289, 0.375856, 0.375856 → p = 0.7·q + 0.1.
    const choice = s.next(5);
    expect(choice.probabilities.a).toBeCloseTo(0.273802, 5);
    expect(choice.probabilities.b).toBeCloseTo(0.363099, 5);
    expect(choice.probabilities.c).toBeCloseTo(0.363099, 5);
    expect(choice.scores?.a).toBeCloseTo(1.232447, 5);
    log = s.log();
    expect(log["bandit/bonus/a"]).toBeCloseTo(0.732447, 5);
    expect(log["bandit/bonus/c"]).toBeCloseTo(0.897061, 5);
    expect(log["bandit/prob/b"]).toBeCloseTo(0.363099, 5);
    expect(log["sched/pick/" + choice.harness]).toBe(1);
    expect(log["sched/visits/a"]).toBe(2);
  });

  it("second sketch of the same harness feeds its EMA (decay 0.5) and the next peer compares to that EMA", () => {
    const config = banditConfig({ sketch_dim: 2, sketch_decay: 0.5 });
    const s = new HarnessBanditScheduler(["a", "b"], config, 1);
    s.update({ harness: "a", learnability: 1, sketch: [1, 0] });
    s.update({ harness: "a", learnability: 1, sketch: [0, 5] }); // EMA of unit sketches: [0.5, 0.5]
    s.update({ harness: "b", learnability: 1, sketch: [1, 0] });
    expect(s.log()["bandit/transfer/b"]).toBeCloseTo(Math.SQRT1_2, 12);
    // A zero gradient has no direction: τ missing (0.5) and the EMA is left alone.
    s.update({ harness: "b", learnability: 0, sketch: [0, 0] });
    expect(s.log()["bandit/transfer_norm/b"]).toBe(0.5);
    s.update({ harness: "a", learnability: 1, sketch: [1, 0] });
    expect(s.log()["bandit/transfer/a"]).toBeCloseTo(1, 12);
  });

  it("aggregates τ over peers by mean (default) or max", () => {
    for (const [aggregate, expected] of [["mean", -0.1], ["max", 0.6]] as const) {
      const s = new HarnessBanditScheduler(abc, banditConfig({ sketch_dim: 2, transfer_aggregate: aggregate }), 1);
      s.update({ harness: "a", learnability: 1, sketch: [1, 0] });
      s.update({ harness: "b", learnability: 1, sketch: [0, 1] });
      s.update({ harness: "c", learnability: 1, sketch: [0.6, -0.8] }); // cos 0.6 to a, -0.8 to b
      expect(s.log()["bandit/transfer/c"]).toBeCloseTo(expected, 12);
    }
  });

  it("a harness whose gradient opposes all the others gets the lowest transferability", () => {
    const s = new HarnessBanditScheduler(["x", "y", "z", "odd"], banditConfig({ sketch_dim: 3, learn_weight: 0 }), 2);
    for (let round = 0; round < 3; round++) {
      s.update({ harness: "x", learnability: 1, sketch: [1, 0.1, 0] });
      s.update({ harness: "y", learnability: 1, sketch: [1, 0, 0.1] });
      s.update({ harness: "z", learnability: 1, sketch: [1, -0.1, 0] });
      s.update({ harness: "odd", learnability: 1, sketch: [-1, 0, 0] });
    }
    const log = s.log();
    expect(log["bandit/transfer_norm/odd"]).toBe(0);
    for (const h of ["x", "y", "z"]) expect(log[`bandit/score/${h}`]).toBeGreaterThan((log["bandit/score/odd"] ?? 1) + 0.3);
    const p = s.next(12).probabilities;
    expect(p.odd).toBeLessThan(p.x ?? 0);
  });

  it("asks for sketches only when it uses them", () => {
    expect(createScheduler({ name: "round-robin" }, abc).sketchOptions).toBeNull();
    expect(createScheduler({ name: "uniform" }, abc).sketchOptions).toBeNull();
    expect(createScheduler(banditConfig({ sketch_dim: 512, sketch_seed: 9 }), abc).sketchOptions).toEqual({ dim: 512, seed: 9 });
  });

  it("tries unvisited harnesses first: they share the mass, visited ones keep only the floor", () => {
    const s = new HarnessBanditScheduler(["a", "b", "c", "d"], banditConfig({ p_min: 0.05, sketch_dim: 2 }), 3);
    s.update({ harness: "b", learnability: 5 });
    const warm = s.next(1);
    expect(warm.scores).toBeUndefined();
    const p = warm.probabilities;
    expect(p.b).toBeCloseTo(0.05, 12);
    for (const h of ["a", "c", "d"]) expect(p[h]).toBeCloseTo(0.05 + 0.8 / 3, 12);
    const noFloor = new HarnessBanditScheduler(["a", "b", "c"], banditConfig({ p_min: 0, sketch_dim: 2 }), 3);
    const seen: string[] = [];
    for (let step = 0; step < 3; step++) {
      const h = noFloor.next(step).harness;
      seen.push(h);
      noFloor.update({ harness: h, learnability: 1 });
    }
    expect([...seen].sort()).toEqual(["a", "b", "c"]);
  });

  it("prefers the harness with the higher learnability once all are visited", () => {
    const s = new HarnessBanditScheduler(["hi", "lo"], banditConfig({ temperature: 0.1, bonus: 0.1, transfer_weight: 0, sketch_dim: 2 }), 5);
    const counts: Record<string, number> = { hi: 0, lo: 0 };
    for (let step = 0; step < 400; step++) {
      const h = s.next(step).harness;
      counts[h] = (counts[h] ?? 0) + 1;
      s.update({ harness: h, learnability: h === "hi" ? 1 : 0.1 });
    }
    expect(counts.hi).toBeGreaterThan(300);
  });

  it("validates its config: K·p_min > 1 is refused, so are bad constants and unknown keys", () => {
    expect(() => new HarnessBanditScheduler(["a", "b", "c"], banditConfig({ p_min: 0.4 }), 0)).toThrow(UserError);
    expect(() => createScheduler(parseSchedulerConfig({ name: "harness-bandit", p_min: 0.5 }), ["a", "b", "c"])).toThrow(/K·p_min must be ≤ 1/);
    expect(() => parseSchedulerConfig({ name: "harness-bandit", temperature: 0 })).toThrow(/scheduler.temperature/);
    expect(() => parseSchedulerConfig({ name: "harness-bandit", learn_weight: 0, transfer_weight: 0 })).toThrow(/must be > 0/);
    expect(() => parseSchedulerConfig({ name: "harness-bandit", window: 1 })).toThrow(UserError);
    expect(() => parseSchedulerConfig({ name: "harness-bandit", windw: 8 })).toThrow(/windw/);
    expect(() => parseSchedulerConfig({ name: "thompson" })).toThrow(UserError);
    const full = parseSchedulerConfig({ name: "harness-bandit" });
    expect(full).toMatchObject({ window: 32, sketch_dim: 1024, sketch_decay: 0.7, score_decay: 0.5, temperature: 0.25, bonus: 0.5, p_min: 0.05 });
  });

  it("refuses observations it cannot use: wrong sketch size, negative or non-finite learnability, unknown harness", () => {
    const s = fixtureBandit();
    expect(() => s.update({ harness: "a", learnability: 1, sketch: [1, 2, 3] })).toThrow(/sketch_dim = 2/);
    expect(() => s.update({ harness: "a", learnability: -1 })).toThrow(UserError);
    expect(() => s.update({ harness: "a", learnability: Number.NaN })).toThrow(UserError);
    expect(() => s.update({ harness: "z", learnability: 1 })).toThrow(/unknown harness/);
    expect(s.log()["bandit/t"]).toBe(0); // nothing was recorded
  });
});

/** Feeds `steps` adversarial observations and checks the floor on every step's probabilities and on frequencies. */
function floorRun(s: HarnessScheduler, steps: number, pMin: number, signal: (h: string, step: number, rng: SeededStream) => { learnability: number; sketch: number[] }): Map<string, number> {
  const rng = new SeededStream(99);
  const counts = new Map(s.harnesses.map((h) => [h, 0]));
  for (let step = 0; step < steps; step++) {
    const c = s.next(step);
    let sum = 0;
    for (const h of s.harnesses) {
      const p = c.probabilities[h] ?? 0;
      expect(p).toBeGreaterThanOrEqual(pMin - 1e-12);
      sum += p;
    }
    expect(Math.abs(sum - 1)).toBeLessThan(1e-9);
    counts.set(c.harness, (counts.get(c.harness) ?? 0) + 1);
    s.update({ harness: c.harness, ...signal(c.harness, step, rng) });
  }
  // 5,000 draws with p ≥ 0.05: the frequency's standard deviation is ≤ 0.0031; allow 0.012 (≈ 4σ).
  for (const h of s.harnesses) expect((counts.get(h) ?? 0) / steps).toBeGreaterThanOrEqual(pMin - 0.012);
  return counts;
}

describe("HarnessBandit probability floor over long adversarial runs", () => {
  const harnesses = ["h0", "h1", "h2", "h3", "h4"];
  const dim = 8;

  it("rich-get-richer: one harness always looks best, the others still get ≥ p_min (5,000 steps)", () => {
    // Every sketch points the same way (τ ties), h0 alone has advantages: h0's fused score is the maximum every time.
    const s = new HarnessBanditScheduler(harnesses, banditConfig({ p_min: 0.05, temperature: 0.01, bonus: 0, sketch_dim: dim }), 11);
    const counts = floorRun(s, 5000, 0.05, (h) => ({ learnability: h === "h0" ? 10 : 0, sketch: [1, 0, 0, 0, 0, 0, 0, 0] }));
    // The adversary works: h0 takes all the mass above the floors (1 − 4·0.05 = 0.8).
    expect((counts.get("h0") ?? 0) / 5000).toBeGreaterThan(0.75);
    for (const h of harnesses.slice(1)) expect((counts.get(h) ?? 0) / 5000).toBeLessThan(0.07);
  });

  it("random heavy-tailed, repeated and degenerate signals (5,000 steps)", () => {
    const s = new HarnessBanditScheduler(harnesses, banditConfig({ p_min: 0.05, temperature: 0.05, window: 4, sketch_dim: dim }), 12);
    floorRun(s, 5000, 0.05, (_h, step, rng) => {
      const kind = step % 7;
      const learnability = kind === 0 ? 0 : kind === 1 ? 1 : 1 / (rng.next() + 1e-6);
      const sketch = kind === 2 ? new Array<number>(dim).fill(0) : Array.from({ length: dim }, () => rng.next() - 0.5);
      return { learnability, sketch };
    });
  });

  it("K·p_min = 1 is exactly uniform whatever the signals", () => {
    const s = new HarnessBanditScheduler(["a", "b", "c", "d"], banditConfig({ p_min: 0.25, sketch_dim: 2 }), 1);
    for (let step = 0; step < 50; step++) {
      const c = s.next(step);
      for (const p of Object.values(c.probabilities)) expect(p).toBeCloseTo(0.25, 12);
      s.update({ harness: c.harness, learnability: step % 3, sketch: [step, 1] });
    }
  });
});
