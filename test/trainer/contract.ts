import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineError, UserError } from "../../src/core/errors.js";
import { TRAINER_CAPABILITIES, capabilitiesOf, hasCapo, hasCritic, hasGradSketch, hasLora } from "../../src/trainer/capabilities.js";
import type { CapoTrainer, CriticTrainer, LoraTrainer, SketchTrainer, Trainer, TrainerCapability } from "../../src/trainer/types.js";
import { batch, branchingPaths, flatRow, makeRow, treeRow } from "./fixtures.js";

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

interface Shared {
  trainer: Trainer;
  dir: string;
}

/**
 * The shared suites for a Trainer adapter: the core suite always, and each capability's suite when the adapter
 * declares that capability. `capabilities` is what the adapter's test file expects it to declare (vitest collects
 * tests before any trainer starts); the core suite checks the adapter declares exactly those, so a capability cannot
 * be declared without its suite running.
 */
export function trainerContracts(name: string, create: () => Promise<Trainer>, capabilities: readonly TrainerCapability[]): void {
  describe(`trainer contract: ${name}`, () => {
    const shared = {} as Shared;

    beforeAll(async () => {
      shared.trainer = await create();
      shared.dir = mkdtempSync(join(tmpdir(), "harnessrl-trainer-"));
    });

    afterAll(async () => {
      await shared.trainer?.close();
      if (shared.dir) rmSync(shared.dir, { recursive: true, force: true });
    });

    coreContract(shared, capabilities);
    if (capabilities.includes("critic")) criticContract(shared);
    if (capabilities.includes("capo")) capoContract(shared);
    if (capabilities.includes("grad_sketch")) sketchContract(shared);
    if (capabilities.includes("lora")) loraContract(shared);
  });
}

/** The core contract: what plain policy-gradient training and the SFT warm start need. */
function coreContract(shared: Shared, capabilities: readonly TrainerCapability[]): void {
  describe("core", () => {
    let trainer: Trainer;
    let dir: string;

    beforeAll(() => {
      ({ trainer, dir } = shared);
    });

    it("reports its backend, ops, presets and exactly the capabilities its suites cover", () => {
      expect(trainer.info.ops).toEqual(expect.arrayContaining(["init", "load", "save", "logprobs"]));
      expect(trainer.info.presets.map((p) => p.name)).toContain("tiny-1m");
      expect(capabilitiesOf(trainer)).toEqual(TRAINER_CAPABILITIES.filter((c) => capabilities.includes(c)));
      expect([...trainer.info.capabilities].sort()).toEqual([...capabilities].sort());
    });

    it("fails a logprobs request before any model is loaded, and keeps working", async () => {
      await expect(trainer.logprobs(batch([flatRow([1, 2, 3])]))).rejects.toMatchObject({ code: "no_model" });
    });

    it("inits a preset, then scores a two-branch tree exactly like each path alone", async () => {
      const info = await trainer.init({ preset: "tiny-1m", seed: 11, out: join(dir, "m0") });
      expect(info.parameters).toBeGreaterThan(500_000);
      expect(info.policyVersion).toBe(0);
      const paths = branchingPaths();
      const { row, nodePaths } = treeRow(paths);
      expect(row.tokens.length).toBeLessThan(paths.reduce((a, p) => a + p.length, 0));
      const tree = await trainer.logprobs(batch([row]));
      const flat = await trainer.logprobs(batch(paths.map(flatRow)));
      expect(tree.logprobs).toHaveLength(1);
      expect(flat.logprobs).toHaveLength(3);
      nodePaths.forEach((nodes, i) => {
        const fromTree = nodes.map((j) => tree.logprobs[0]?.[j] ?? NaN);
        const entFromTree = nodes.map((j) => tree.entropy?.[0]?.[j] ?? NaN);
        expect(maxAbsDiff(fromTree, flat.logprobs[i] as Float32Array)).toBeLessThanOrEqual(1e-5);
        expect(maxAbsDiff(entFromTree, flat.entropy?.[i] as Float32Array)).toBeLessThanOrEqual(1e-5);
      });
      const lp = flat.logprobs[0] as Float32Array;
      expect(lp[0]).toBe(0); // the root has no logprob
      for (let i = 1; i < lp.length; i++) expect(lp[i]).toBeLessThan(0);
      const ent = flat.entropy?.[0] as Float32Array;
      for (let i = 1; i < ent.length; i++) {
        expect(ent[i]).toBeGreaterThan(0);
        expect(ent[i]).toBeLessThanOrEqual(Math.log(265) + 1e-4);
      }
    });

    it("scales logits by the sampling temperature", async () => {
      const b = batch([flatRow(branchingPaths()[0] as number[])]);
      const t1 = await trainer.logprobs(b, { temperature: 1 });
      const t07 = await trainer.logprobs(b, { temperature: 0.7, entropy: false });
      expect(t07.entropy).toBeNull();
      expect(maxAbsDiff(t1.logprobs[0] as Float32Array, t07.logprobs[0] as Float32Array)).toBeGreaterThan(1e-4);
    });

    it("rejects a malformed batch with a non-retryable error and stays usable", async () => {
      const bad = makeRow([1, 2, 3], [-1, 2, 1], [0, 1, 2]); // parent 2 of token 1 is not earlier
      const err = await trainer.logprobs(batch([bad])).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EngineError);
      expect(err).toMatchObject({ code: "invalid_trainer_request", retryable: false });
      const outOfVocab = await trainer.logprobs(batch([flatRow([1, 9999])])).catch((e: unknown) => e);
      expect(outOfVocab).toMatchObject({ code: "invalid_trainer_request" });
      const ok = await trainer.logprobs(batch([flatRow([1, 2, 3])]));
      expect(ok.logprobs[0]).toHaveLength(3);
    });

    it("saves with a new policy version and reloads the same numbers", async () => {
      const b = batch([flatRow(branchingPaths()[1] as number[])]);
      const before = await trainer.logprobs(b);
      const saved = await trainer.save(join(dir, "v1"), { policyVersion: 1 });
      expect(saved.policyVersion).toBe(1);
      const loaded = await trainer.load(join(dir, "v1"));
      expect(loaded.policyVersion).toBe(1);
      const after = await trainer.logprobs(b);
      expect(after.policyVersion).toBe(1);
      expect(maxAbsDiff(before.logprobs[0] as Float32Array, after.logprobs[0] as Float32Array)).toBe(0);
    });

    it("trains: forward/backward then an AdamW step raises positive-advantage logprobs and lowers negative ones", async () => {
      const paths = branchingPaths();
      const rows = [flatRow(paths[0] as number[]), flatRow(paths[2] as number[])];
      const before = await trainer.logprobs(batch(rows), { entropy: false });
      // Only the sampled continuations after the shared 26-token prompt are trainable (the prompt is context).
      const promptLength = 26;
      const total = rows.reduce((a, r) => a + r.tokens.length - promptLength, 0);
      rows.forEach((row, k) => {
        row.oldLogprobs.set(before.logprobs[k] as Float32Array);
        for (let i = promptLength; i < row.tokens.length; i++) {
          row.trainable[i] = 1;
          row.advantages[i] = k === 0 ? 1 : -1;
          row.lossWeights[i] = 1 / total;
        }
      });
      expect((await trainer.optimStep({ lr: 0.01 })).skipped).toBe(true);
      // The reference policy is the current one here, so the KL penalty is present but zero.
      const fb = await trainer.forwardBackward(batch(rows), { refLogprobs: before.logprobs, loss: { klCoef: 0.1 } });
      expect(fb.refKlMean).toBeLessThan(1e-6);
      expect(fb.trainableTokens).toBe(total);
      expect(fb.mismatchAbsMax).toBeLessThan(1e-5);
      expect(fb.clipFraction).toBe(0);
      // forward_backward scores the trainable tokens only (the prompt's entries are 0).
      const scored = (a: Float32Array[], k: number): Float32Array => (a[k] ?? new Float32Array()).subarray(promptLength);
      expect(maxAbsDiff(scored(fb.logprobs, 0), scored(before.logprobs, 0))).toBeLessThan(1e-5);
      expect(fb.logprobs[0]?.subarray(0, promptLength).every((x) => x === 0)).toBe(true);
      expect(fb.peakRssMb).toBeGreaterThan(0);
      const step = await trainer.optimStep({ lr: 0.01, maxGradNorm: 1 });
      expect(step).toMatchObject({ skipped: false, step: 1 });
      expect(step.gradNorm).toBeGreaterThan(0);
      const after = await trainer.logprobs(batch(rows), { entropy: false });
      const sum = (a: Float32Array | undefined): number => (a ?? new Float32Array()).subarray(promptLength).reduce((x, y) => x + y, 0);
      expect(sum(after.logprobs[0])).toBeGreaterThan(sum(before.logprobs[0]));
      expect(sum(after.logprobs[1])).toBeLessThan(sum(before.logprobs[1]));
    });

    it("fine-tunes on demonstrations (sft objective): the demonstrated tokens become more likely", async () => {
      const demo = flatRow(branchingPaths()[1] as number[]);
      for (let i = 26; i < demo.tokens.length; i++) {
        demo.trainable[i] = 1;
        demo.lossWeights[i] = 1 / (demo.tokens.length - 26);
      }
      const first = await trainer.forwardBackward(batch([demo]), { objective: "sft" });
      expect(first.nllMean).toBeGreaterThan(0);
      expect(first.loss).toBeCloseTo(first.nllMean, 4);
      await trainer.optimStep({ lr: 0.01 });
      const second = await trainer.forwardBackward(batch([demo]), { objective: "sft" });
      await trainer.zeroGrad();
      expect(second.nllMean).toBeLessThan(first.nllMean);
    });

    it("checkpoints weights, optimizer steps and the caller's extra state, and resumes from them", async () => {
      const saved = await trainer.saveCheckpoint(join(dir, "ckpt"), { policyVersion: 3, extra: { runStep: 2, cursor: [1, 2] } });
      expect(saved.optimizerSteps).toBeGreaterThanOrEqual(2); // the training tests above took steps
      expect(saved.model.policyVersion).toBe(3);
      await trainer.init({ preset: "tiny-1m", seed: 99, out: join(dir, "other") });
      const resumed = await trainer.loadCheckpoint(join(dir, "ckpt"));
      expect(resumed.optimizerSteps).toBe(saved.optimizerSteps);
      expect(resumed.extra).toEqual({ runStep: 2, cursor: [1, 2] });
      expect(resumed.hasCritic).toBe(saved.hasCritic);
      expect(resumed.model.policyVersion).toBe(3);
    });

    it("reports a missing model directory as the user's error", async () => {
      await expect(trainer.load(join(dir, "does-not-exist"))).rejects.toBeInstanceOf(UserError);
    });
  });
}

/** Each capability suite starts from its own fresh model, so it does not depend on the core suite's order. */
/** A policy-gradient row scored by the trainer itself: tokens from 26 on trainable, advantage 1, weight 0.1. */
async function scoredRow(trainer: Trainer): Promise<ReturnType<typeof flatRow>> {
  const row = flatRow(branchingPaths()[0] as number[]);
  const before = await trainer.logprobs(batch([row]), { entropy: false });
  row.oldLogprobs.set(before.logprobs[0] as Float32Array);
  for (let i = 26; i < row.tokens.length; i++) {
    row.trainable[i] = 1;
    row.advantages[i] = 1;
    row.lossWeights[i] = 0.1;
  }
  return row;
}

function freshModel(shared: Shared, name: string, seed: number): Promise<unknown> {
  return shared.trainer.init({ preset: "tiny-1m", seed, out: join(shared.dir, name) });
}

/** Capability "critic". */
function criticContract(shared: Shared): void {
  describe("capability: critic", () => {
    let trainer: CriticTrainer;
    let dir: string;

    beforeAll(async () => {
      if (!hasCritic(shared.trainer)) throw new Error("declared critic, but hasCritic is false");
      ({ trainer, dir } = { trainer: shared.trainer, dir: shared.dir });
      await freshModel(shared, "critic-policy", 21);
    });

    it("trains a PPO critic beside the policy: values start at 0 and move towards the returns", async () => {
      await expect(trainer.criticValues(batch([flatRow([1, 2, 3])]))).rejects.toMatchObject({ code: "no_critic" });
      const info = await trainer.criticInit();
      expect(info.parameters).toBeGreaterThan(0);
      const row = flatRow(branchingPaths()[0] as number[]);
      row.returns = new Float32Array(row.tokens.length).fill(0.5);
      for (let i = 1; i < row.tokens.length; i++) {
        row.trainable[i] = 1;
        row.lossWeights[i] = 1 / (row.tokens.length - 1);
      }
      const v0 = await trainer.criticValues(batch([row]));
      expect(Array.from(v0[0] ?? []).every((v) => v === 0)).toBe(true);
      const first = await trainer.criticForwardBackward(batch([row]));
      expect(first.valueLoss).toBeCloseTo(0.5 * 0.25, 5);
      expect((await trainer.criticOptimStep({ lr: 0.01 })).step).toBe(1);
      const v1 = await trainer.criticValues(batch([row]));
      expect(v1[0]?.[5]).toBeGreaterThan(0);
      const saved = await trainer.criticSave(join(dir, "critic"));
      expect((await trainer.criticLoad(join(dir, "critic"))).parameters).toBe(saved.parameters);
    });

    it("saves the critic in checkpoints and restores it", async () => {
      const row = flatRow(branchingPaths()[0] as number[]);
      const before = await trainer.criticValues(batch([row]));
      expect((await trainer.saveCheckpoint(join(dir, "critic-ckpt"))).hasCritic).toBe(true);
      await trainer.criticInit({ fromPolicy: false, seed: 5 });
      const restored = await trainer.loadCheckpoint(join(dir, "critic-ckpt"));
      expect(restored.hasCritic).toBe(true);
      expect(Array.from((await trainer.criticValues(batch([row])))[0] ?? [])).toEqual(Array.from(before[0] ?? []));
    });
  });
}

/** Capability "capo". */
function capoContract(shared: Shared): void {
  describe("capability: capo", () => {
    let trainer: CapoTrainer;
    let dir: string;

    beforeAll(async () => {
      if (!hasCapo(shared.trainer)) throw new Error("declared capo, but hasCapo is false");
      ({ trainer, dir } = { trainer: shared.trainer, dir: shared.dir });
      await freshModel(shared, "capo-policy", 22);
    });

    it("CAPO: probes partitions, then takes a partition-routed backward and a masked step", async () => {
      const row = await scoredRow(trainer);
      for (let i = 26; i < row.tokens.length; i++) {
        if (i < 30) row.actionMask[i] = 1;
        else row.argsMask[i] = 1;
      }
      await expect(trainer.forwardBackward(batch([row]), { capo: true })).rejects.toMatchObject({ code: "no_capo_masks" });
      const probe = await trainer.capoProbe(batch([row]), { topFraction: 0.25 });
      expect(probe.unitsPerLayer).toBe(128); // 25% of the tiny-1m MLP width (512)
      const fb = await trainer.forwardBackward(batch([row]), { capo: true });
      expect(fb.capoGradCosine).toBeGreaterThanOrEqual(-1);
      expect(fb.capoGradCosine).toBeLessThanOrEqual(1);
      expect((await trainer.optimStep({ lr: 0.01, weightDecay: 0.1, capo: true })).skipped).toBe(false);
      // The partitions travel in checkpoints, so a resumed run need not re-probe.
      expect((await trainer.saveCheckpoint(join(dir, "capo-ckpt"))).hasCapoMasks).toBe(true);
      expect((await trainer.loadCheckpoint(join(dir, "capo-ckpt"))).hasCapoMasks).toBe(true);
      await trainer.forwardBackward(batch([row]), { capo: true });
      await trainer.zeroGrad();
    });
  });
}

/** Capability "grad_sketch". */
function sketchContract(shared: Shared): void {
  describe("capability: grad_sketch", () => {
    let trainer: SketchTrainer;

    beforeAll(async () => {
      if (!hasGradSketch(shared.trainer)) throw new Error("declared grad_sketch, but hasGradSketch is false");
      trainer = shared.trainer;
      await freshModel(shared, "sketch-policy", 23);
    });

    it("sketches the accumulated gradient: fixed by the seed, linear in the gradient", async () => {
      const row = await scoredRow(trainer);
      await expect(trainer.gradSketch({ dim: 64, seed: 1 })).rejects.toMatchObject({ code: "invalid_trainer_request" });
      await trainer.forwardBackward(batch([row]));
      const { sketch, gradNorm } = await trainer.gradSketch({ dim: 64, seed: 1 });
      expect(sketch).toHaveLength(64);
      expect(gradNorm).toBeGreaterThan(0);
      expect(Array.from((await trainer.gradSketch({ dim: 64, seed: 1 })).sketch)).toEqual(Array.from(sketch));
      expect(Array.from((await trainer.gradSketch({ dim: 64, seed: 2 })).sketch)).not.toEqual(Array.from(sketch));
      // The same batch again doubles the accumulated gradient, and so the sketch.
      await trainer.forwardBackward(batch([row]));
      const doubled = (await trainer.gradSketch({ dim: 64, seed: 1 })).sketch;
      doubled.forEach((v, i) => expect(v).toBeCloseTo(2 * (sketch[i] as number), 4));
      await trainer.zeroGrad();
    });
  });
}

/** Capability "lora". */
function loraContract(shared: Shared): void {
  describe("capability: lora", () => {
    let trainer: LoraTrainer;
    let dir: string;

    beforeAll(async () => {
      if (!hasLora(shared.trainer)) throw new Error("declared lora, but hasLora is false");
      ({ trainer, dir } = { trainer: shared.trainer, dir: shared.dir });
      await freshModel(shared, "lora-base", 24);
    });

    it("trains adapters on a frozen base: starts at the base, saves merged weights plus a PEFT adapter, checkpoints restore it", async () => {
      const base = join(dir, "lora-base");
      const row = await scoredRow(trainer);
      const before = (await trainer.logprobs(batch([row]), { entropy: false })).logprobs[0] as Float32Array;
      const info = await trainer.loraInit({ rank: 4, alpha: 8, baseDir: base });
      expect([info.adapters, info.scale, info.targetModules.length]).toEqual([4 * 7, 2, 7]);
      expect(info.trainableParameters).toBeLessThan(info.baseParameters / 5);
      expect(Array.from((await trainer.logprobs(batch([row]), { entropy: false })).logprobs[0] ?? [])).toEqual(Array.from(before));
      await trainer.forwardBackward(batch([row]));
      expect((await trainer.optimStep({ lr: 0.05 })).skipped).toBe(false);
      const trained = (await trainer.logprobs(batch([row]), { entropy: false })).logprobs[0] as Float32Array;
      expect(maxAbsDiff(trained, before)).toBeGreaterThan(1e-3);
      await trainer.save(join(dir, "lora-v1"), { policyVersion: 1 });
      expect(existsSync(join(dir, "lora-v1", "adapter", "adapter_config.json"))).toBe(true);
      expect((await trainer.saveCheckpoint(join(dir, "lora-ckpt"))).hasLora).toBe(true);
      await expect(trainer.loraInit({ rank: 4, baseDir: base })).rejects.toMatchObject({ code: "invalid_trainer_request" });
      // A plain load of the saved (merged) policy scores like the adapted model; the checkpoint brings the adapters back.
      await trainer.load(join(dir, "lora-v1"));
      expect(maxAbsDiff((await trainer.logprobs(batch([row]), { entropy: false })).logprobs[0] ?? [], trained)).toBeLessThan(1e-5);
      expect((await trainer.loadCheckpoint(join(dir, "lora-ckpt"))).hasLora).toBe(true);
      expect(Array.from((await trainer.logprobs(batch([row]), { entropy: false })).logprobs[0] ?? [])).toEqual(Array.from(trained));
    });
  });
}
