import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { loadRunConfig } from "../../src/train/config.js";
import { checkTrainerCapabilities, trainerNeeds } from "../../src/train/trainer-capabilities.js";
import { capabilitiesOf, hasCapo, hasCritic, hasGradSketch, requireCapability } from "../../src/trainer/capabilities.js";
import { createTrainer } from "../../src/trainer/index.js";
import type { Trainer } from "../../src/trainer/types.js";
import { trainerContracts } from "./contract.js";
import { coreOnly } from "./core-only.js";
import { batch, flatRow } from "./fixtures.js";

trainerContracts("a core-only backend (view of torch)", async () => coreOnly(await createTrainer("torch", { threads: 1 })), []);

describe("trainer capabilities", () => {
  let torch: Trainer;
  let core: Trainer;

  beforeAll(async () => {
    torch = await createTrainer("torch", { threads: 1 });
    core = coreOnly(torch);
  });

  afterAll(async () => {
    await torch?.close();
  });

  it("narrow a trainer only when a capability is declared and implemented", () => {
    expect([hasCritic(torch), hasCapo(torch), hasGradSketch(torch)]).toEqual([true, true, true]);
    expect([hasCritic(core), hasCapo(core), hasGradSketch(core)]).toEqual([false, false, false]);
    expect(capabilitiesOf(core)).toEqual([]);
    // Declared but not implemented is not a capability either.
    const claims: Trainer = { ...core, info: { ...core.info, capabilities: ["critic", "capo", "grad_sketch"] } };
    expect(capabilitiesOf(claims)).toEqual([]);
  });

  it("are a type-level split: the core contract has no critic, probe, sketch or CAPO options", async () => {
    const b = batch([flatRow([257, 1, 2])]);
    const reject = (p: Promise<unknown>): Promise<void> => expect(p).rejects.toThrow();
    // @ts-expect-error criticInit is the "critic" capability's
    await reject(Promise.resolve().then(() => core.criticInit()));
    // @ts-expect-error capoProbe is the "capo" capability's
    await reject(Promise.resolve().then(() => core.capoProbe(b)));
    // @ts-expect-error gradSketch is the "grad_sketch" capability's
    await reject(Promise.resolve().then(() => core.gradSketch()));
    // @ts-expect-error the capo option is the "capo" capability's
    const options: Parameters<Trainer["optimStep"]>[0] = { lr: 0, capo: true };
    expect(options.lr).toBe(0);
    // Narrowed, the same calls type-check.
    if (hasCapo(torch)) expect(typeof torch.capoProbe).toBe("function");
  });

  it("missing: requireCapability names what asked for it and what the backend has", () => {
    const err = (() => {
      try {
        requireCapability(core, "critic", "this test");
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(UserError);
    expect(err).toMatchObject({ code: "unsupported_trainer_capability", details: { capability: "critic", backend: "core-only", has: [] } });
    expect((err as Error).message).toMatch(/this test needs the trainer capability "critic".*"core-only" lacks \(it has: the core contract only\)/);
    expect(requireCapability(torch, "critic", "this test")).toBe(torch);
  });

  it("each shipped config that needs a capability is refused on a core-only backend, and accepted on torch", () => {
    const cases: [string, string[]][] = [
      ["configs/quickstart.yaml", []],
      ["configs/quickstart-ppo.yaml", ["critic"]],
      ["experiments/capo-central/capo-central.yaml", ["capo"]],
      ["experiments/harness-mix/harness-bandit.yaml", ["grad_sketch"]],
      ["experiments/harness-mix/harness-bandit-probe.yaml", ["grad_sketch"]],
      ["experiments/harness-mix/round-robin.yaml", []],
    ];
    for (const [path, needs] of cases) {
      const config = loadRunConfig(path);
      expect(trainerNeeds(config).map((n) => n.capability), path).toEqual(needs);
      expect(() => checkTrainerCapabilities(torch, config)).not.toThrow();
      if (needs.length === 0) expect(() => checkTrainerCapabilities(core, config)).not.toThrow();
      else expect(() => checkTrainerCapabilities(core, config), path).toThrow(expect.objectContaining({ code: "unsupported_trainer_capability", details: expect.objectContaining({ capability: needs[0] }) }));
    }
    expect(() => checkTrainerCapabilities(core, loadRunConfig("configs/quickstart-ppo.yaml"))).toThrow(/the config's advantage estimator "ppo" needs the trainer capability "critic"/);
  });
});
