import { describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { checkRunConfigNames } from "../../src/run/check-names.js";
import { banditConfig, createScheduler, HarnessBanditScheduler, parseSchedulerConfig } from "../../src/schedule/index.js";
import type { BanditConfig } from "../../src/schedule/index.js";
import { configCheckLine, parseRunConfig } from "../../src/train/config.js";

/**
 * Probe harnesses: never trained on, their gradient sketches enter the training harnesses' transferability. Fixture:
 * "good" always sends u = (1, 0, 0), "bad" v = (0, 1, 0): orthogonal, so against each other their τ is 0 and they are
 * indistinguishable. The probe "held" sends p = (1, −1, 0): cos(u, p) = +1/√2, cos(v, p) = −1/√2.
 */
const U = [1, 0, 0];
const V = [0, 1, 0];
const P = [1, -1, 0];
const R = Math.SQRT1_2;

function fixture(overrides: Partial<Omit<BanditConfig, "name">> = {}): HarnessBanditScheduler {
  return new HarnessBanditScheduler(["good", "bad"], banditConfig({ sketch_dim: 3, temperature: 0.25, bonus: 0.5, p_min: 0.05, ...overrides }), 11);
}

/** `rounds` steps of each training harness (fixed order, equal learnability), each round after one probe sketch. */
function feed(s: HarnessBanditScheduler, rounds: number, probe: boolean): void {
  for (let r = 0; r < rounds; r++) {
    if (probe) s.updateProbe({ harness: "held", sketch: P });
    s.update({ harness: "good", learnability: 1, sketch: U });
    s.update({ harness: "bad", learnability: 1, sketch: V });
  }
}

describe("HarnessBandit with probe harnesses", () => {
  it("without probes, the orthogonal harnesses are tied; with a probe, the one anti-aligned with it loses probability", () => {
    const plain = fixture();
    feed(plain, 3, false);
    const tied = plain.next(6).probabilities;
    expect(tied.good).toBeCloseTo(0.5, 12);
    expect(tied.bad).toBeCloseTo(0.5, 12);

    const probed = fixture({ probe_harnesses: ["held"] });
    feed(probed, 3, true);
    const p = probed.next(6).probabilities;
    // Fused scores ≈ 0.5·0.5 + 0.5·τ̂ with τ̂(good) ≈ 0.6 and τ̂(bad) = 0: a gap ≈ 0.3, e^(0.3/0.25) ≈ 3.3 at T = 0.25.
    expect(p.good).toBeGreaterThan(0.7);
    expect(p.bad).toBeLessThan(0.3);
    expect((p.good ?? 0) + (p.bad ?? 0)).toBeCloseTo(1, 12);

    // A probe weight of 0 switches the probes off: the same picture as without them.
    const off = fixture({ probe_harnesses: ["held"], probe_weight: 0 });
    feed(off, 3, true);
    expect(off.next(6).probabilities.good).toBeCloseTo(0.5, 12);
  });

  it("τ = (1 − w)·τ_train + w·τ_probe, each part logged, and probes are never counted as trained", () => {
    const s = fixture({ probe_harnesses: ["held"], probe_weight: 0.25 });
    s.updateProbe({ harness: "held", sketch: P });
    // good first: no training peer yet, so τ is τ_probe alone.
    s.update({ harness: "good", learnability: 1, sketch: U });
    let log = s.log();
    expect(log["bandit/transfer_probe/good"]).toBeCloseTo(R, 12);
    expect(log["bandit/transfer_train/good"]).toBeUndefined();
    expect(log["bandit/transfer/good"]).toBeCloseTo(R, 12);
    // bad: τ_train = cos(v, u) = 0, τ_probe = −1/√2 → τ = 0.75·0 + 0.25·(−1/√2).
    s.update({ harness: "bad", learnability: 1, sketch: V });
    log = s.log();
    expect(log["bandit/transfer_train/bad"]).toBeCloseTo(0, 12);
    expect(log["bandit/transfer_probe/bad"]).toBeCloseTo(-R, 12);
    expect(log["bandit/transfer/bad"]).toBeCloseTo(-0.25 * R, 12);
    expect(log["bandit/probe_cos/bad/held"]).toBeCloseTo(-R, 12);
    expect(log["bandit/probe_cos/good/held"]).toBeCloseTo(R, 12);
    expect(log["bandit/transfer_norm/bad"]).toBe(0); // the window's lowest τ
    expect(log["bandit/probe_peers"]).toBe(1);
    expect(log["bandit/probe_visits/held"]).toBe(1);
    // Probes have no arm: no visits, no probability, no window entry.
    expect(log["bandit/t"]).toBe(2);
    expect(log["bandit/window/size"]).toBe(2);
    expect(Object.keys(log).filter((k) => k.startsWith("sched/") && k.endsWith("/held"))).toEqual([]);
    expect(Object.keys(s.next(2).probabilities)).toEqual(["good", "bad"]);
  });

  it("resumes exactly: a restored scheduler makes the same picks, and a state for other probes is refused", () => {
    const config = { probe_harnesses: ["held"] };
    const a = fixture(config);
    feed(a, 2, true);
    const b = fixture(config);
    b.restore(JSON.parse(JSON.stringify(a.state())));
    for (let step = 4; step < 12; step++) {
      const ca = a.next(step);
      expect(b.next(step)).toEqual(ca);
      a.updateProbe({ harness: "held", sketch: P });
      b.updateProbe({ harness: "held", sketch: P });
      const sketch = ca.harness === "good" ? U : V;
      a.update({ harness: ca.harness, learnability: 1, sketch });
      b.update({ harness: ca.harness, learnability: 1, sketch });
    }
    expect(b.log()).toEqual(a.log());
    expect(() => fixture({ probe_harnesses: ["other"] }).restore(a.state())).toThrow(/probe harnesses \[held\], not \[other\]/);
    // A state written before probes existed has none: it restores, and the probes start without sketches.
    const old = fixture();
    feed(old, 1, false);
    const upgraded = fixture(config);
    upgraded.restore(old.state());
    expect(upgraded.log()["bandit/probe_visits/held"]).toBe(0);
  });

  it("refuses probe sketches it cannot use and probes that are training harnesses", () => {
    const s = fixture({ probe_harnesses: ["held"] });
    expect(() => s.updateProbe({ harness: "good", sketch: U })).toThrow(/unknown probe harness "good"/);
    expect(() => s.updateProbe({ harness: "held", sketch: [1, 2] })).toThrow(/sketch_dim = 3/);
    expect(() => fixture().updateProbe({ harness: "held", sketch: P })).toThrow(UserError);
    expect(() => createScheduler({ name: "round-robin" }, ["good"]).updateProbe({ harness: "held" })).toThrow(UserError);
    expect(() => fixture({ probe_harnesses: ["bad"] })).toThrow(/probe harness "bad" is also a training harness/);
    expect(fixture().probes).toBeNull();
    expect(fixture({ probe_harnesses: ["held"], probe_every: 3, probe_tasks: 2 }).probes).toEqual({ harnesses: ["held"], every: 3, tasks: 2, samples: null });
  });
});

describe("probe harness config", () => {
  const base = { model: { preset: "tiny-1m" }, harnesses: ["chat-agent", "resp-agent"], tasks: { train: "calcrun:train" }, mix: "scheduled" };
  const lines = (scheduler: Record<string, unknown>, extra: Record<string, unknown> = {}): string[] => {
    try {
      parseRunConfig({ ...base, ...extra, scheduler: { name: "harness-bandit", ...scheduler } });
    } catch (e) {
      return (e as Error).message.split("\n").slice(1).map((l) => l.trim());
    }
    return [];
  };

  it("defaults to no probes, every step, one task, the run's samples, weight 0.5", () => {
    expect(parseSchedulerConfig({ name: "harness-bandit" })).toMatchObject({ probe_harnesses: [], probe_every: 1, probe_tasks: 1, probe_weight: 0.5 });
    expect(parseSchedulerConfig({ name: "harness-bandit" })).not.toHaveProperty("probe_samples");
    expect(lines({ probe_harnesses: ["claw-agent"], probe_every: 2, probe_tasks: 2, probe_samples: 4, probe_weight: 1 })).toEqual([]);
  });

  it("refuses empty names, duplicates, training harnesses, bad counts and weights; takes probes on a cluster", () => {
    expect(lines({ probe_harnesses: [""] })).toEqual([expect.stringMatching(/^scheduler\.probe_harnesses\.0: /)]);
    expect(lines({ probe_harnesses: ["claw-agent", "claw-agent"] })).toEqual([expect.stringMatching(/^scheduler\.probe_harnesses: a probe harness is listed twice/)]);
    expect(lines({ probe_harnesses: ["claw-agent", "resp-agent"] })).toEqual([expect.stringMatching(/^scheduler\.probe_harnesses\.1: "resp-agent" is a training harness/)]);
    expect(lines({ probe_every: 0 })).toEqual([expect.stringMatching(/^scheduler\.probe_every: /)]);
    expect(lines({ probe_samples: 1 })).toEqual([expect.stringMatching(/^scheduler\.probe_samples: /)]);
    expect(lines({ probe_weight: 1.5 })).toEqual([expect.stringMatching(/^scheduler\.probe_weight: /)]);
    // On a cluster the probe rollouts are jobs like the step's (test/train/cluster-train.test.ts).
    expect(lines({ probe_harnesses: ["claw-agent"] }, { cluster: { queue: "redis://localhost:6379", store: "sqlite:/tmp/x.sqlite" } })).toEqual([]);
    // Other schedulers have no probes: the key is unknown to them.
    expect(() => parseRunConfig({ ...base, scheduler: { name: "round-robin", probe_harnesses: ["claw-agent"] } })).toThrow(/scheduler\.probe_harnesses: unknown key/);
  });

  it("checks probe harness names against the harness registry, at their path", () => {
    const config = parseRunConfig({ ...base, scheduler: { name: "harness-bandit", probe_harnesses: ["claw-agent", "claw-agnet"] } });
    expect(() => checkRunConfigNames(config)).toThrow(/scheduler\.probe_harnesses\.1: unknown harness "claw-agnet"/);
    const ok = parseRunConfig({ ...base, scheduler: { name: "harness-bandit", probe_harnesses: ["claw-agent"] } });
    expect(() => checkRunConfigNames(ok)).not.toThrow();
    // `train --check` names the probes.
    expect(configCheckLine("x.yaml", ok)).toMatch(/\(mix: scheduled, harness-bandit, probes: claw-agent\)$/);
  });
});
