import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import "../../src/harness/index.js";
import type { GenerateRequest } from "../../src/engine/types.js";
import { RolloutStack } from "../../src/rollout/stack.js";
import { runRollouts } from "../../src/rollout/runner.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { buildRunContext, openTrainer, runEngine, runStackOptions, type RunContext } from "../../src/run/context.js";
import { loadSuite } from "../../src/tasks/registry.js";
import { ByteTokenizer } from "../../src/tokenizer/bytes.js";
import { batchForRollouts } from "../../src/train/batches.js";
import { parseRunConfig } from "../../src/train/config.js";
import { trainOnRollouts } from "../../src/train/rl-step.js";
import type { Trainer } from "../../src/trainer/types.js";
import { writeRandomModelDir } from "../../src/weights/random-model.js";
import { codeCorpus, trainedTokenizerJson } from "../tokenizer/trained-bpe.js";

/** What the engine was asked and what it answered, per call. */
interface EngineCall {
  prompt: number[];
  completion: number[];
}

/**
 * The acceptance test for "the policy's codec comes from the policy": a model directory whose tokenizer is a
 * Hugging Face byte-level BPE (not the tiny byte tokenizer) is trained for one RL step through a built-in harness in
 * bwrap sandboxes, served by the oracle engine rendering with the run context's codec. Every call's prompt and
 * completion ids, as the engine saw and produced them, must be exactly the ids the training batch holds.
 */
describe("one RL step on a model directory with a Hugging Face BPE tokenizer", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-bpe-run-"));
  const modelDir = join(root, "model");
  const engineCalls = new Map<string, EngineCall>();
  let ctx: RunContext;
  let stack: RolloutStack;
  let results: RolloutResult[];
  let trainer: Trainer | undefined;

  beforeAll(async () => {
    // 300 merges learnt on source code: common English and shell fragments become single tokens.
    const json = trainedTokenizerJson(codeCorpus(200_000), 300);
    writeRandomModelDir(modelDir, { modelType: "qwen3", hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 128, seed: 3, hfTokenizer: json, vocabSize: 576 });
    const config = parseRunConfig({
      model: { dir: modelDir },
      trainer: { threads: 1 },
      sampling: { temperature: 1, max_tokens: 256 },
      rollout: { sandbox: "bwrap", concurrency: 4, max_turns: 6, timeout_s: 60 },
      harnesses: ["chat-agent"],
      tasks: { train: "calcrun:train?n=2&seed=1" },
      algorithm: { lr: 0.01 },
      budget: { steps: 1, tasks_per_step: 2, samples: 2 },
    });
    ctx = buildRunContext(config, { runDir: join(root, "run") });
    // The oracle plays the policy: its turns are rendered with the codec the context loaded from the model directory.
    stack = await RolloutStack.open(runStackOptions(ctx, runEngine(ctx, "oracle"), "memory"));
    const engine = stack.engine;
    const generate = engine.generate.bind(engine);
    engine.generate = async (request: GenerateRequest) => {
      const result = await generate(request);
      engineCalls.set(request.context?.callId ?? "?", { prompt: [...request.promptTokens], completion: [...result.tokens] });
      return result;
    };
    const tasks = (await loadSuite(config.tasks.train)).tasks;
    const ran = await runRollouts(stack, { tasks, harnesses: config.harnesses, samples: config.budget.samples, idPrefix: "bpe" }, { concurrency: config.rollout.concurrency, settings: ctx.rolloutSettings });
    // The oracle solves every task; GRPO needs reward variance within a group, so sample 1 counts as a failure.
    results = ran.map((r) => ({ ...r, score: r.sample === 0 ? r.score : 0 }));
  }, 300_000);

  afterAll(async () => {
    await trainer?.close();
    await stack?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("serves the policy with the model directory's BPE codec", () => {
    expect(ctx.policy.codec.tokenizer.kind).toBe("hf-bpe");
    expect(stack.engine.tokenizer).toBe(ctx.policy.codec.tokenizer);
    expect(stack.engine.renderer).toBe(ctx.policy.codec.renderer);
    expect(results.map((r) => `${r.rolloutId}:${r.status}`).filter((s) => !s.endsWith(":ok"))).toEqual([]);
    expect(engineCalls.size).toBeGreaterThanOrEqual(results.length * 2);
  });

  it("records the engine's prompt and completion ids, in the BPE's ids, not the byte tokenizer's", () => {
    const tokenizer = ctx.policy.codec.tokenizer;
    const bytes = new ByteTokenizer();
    const records = stack.store.listCalls({});
    expect(records.length).toBe(engineCalls.size);
    for (const r of records) {
      const seen = engineCalls.get(r.callId);
      expect(seen, r.callId).toBeDefined();
      expect(r.promptTokens).toEqual(seen!.prompt);
      expect(r.completionTokens).toEqual(seen!.completion);
      const text = tokenizer.decode(seen!.prompt);
      expect(tokenizer.encode(text)).toEqual(seen!.prompt);
      // Merges make the BPE's ids a different, shorter sequence than one id per byte.
      expect(seen!.prompt.length).toBeLessThan(bytes.encode(text).length * 0.8);
      expect(seen!.prompt.some((id) => id >= 256 && id < tokenizer.vocabSize && !tokenizer.specialTokens.has(tokenizer.decode([id])))).toBe(true);
    }
  });

  it("builds a batch whose token ids are the engine's prompt + completion ids, call by call", () => {
    const built = batchForRollouts(stack.store, results, { rowTokens: ctx.config.algorithm.row_tokens });
    expect(new Set(built.index.calls.map((c) => c.callId))).toEqual(new Set(engineCalls.keys()));
    // Every root-to-leaf path reads, from the batch's parent pointers, exactly its leaf call's prompt + completion.
    expect(built.index.paths.length).toBeGreaterThan(0);
    for (const path of built.index.paths) {
      const row = built.batch.rows[path.row]!;
      const ids: number[] = [];
      for (let i = path.leafToken; i >= 0; i = row.parent[i]!) ids.push(row.tokens[i]!);
      ids.reverse();
      const leaf = engineCalls.get(path.leafCallId)!;
      expect(ids).toEqual([...leaf.prompt, ...leaf.completion]);
    }
    // Every call's sampled tokens are trainable in the batch, in the engine's order.
    const sampled = new Map<string, number[]>();
    built.batch.rows.forEach((row, r) => {
      const index = built.index.rows[r]!;
      for (let i = 0; i < row.tokens.length; i++) {
        if (index.offset[i]! < 0) continue;
        expect(row.trainable[i]).toBe(1);
        const callId = built.index.calls[index.call[i]!]!.callId;
        const own = sampled.get(callId) ?? [];
        own[index.offset[i]!] = row.tokens[i]!;
        sampled.set(callId, own);
      }
    });
    for (const [callId, call] of engineCalls) expect(sampled.get(callId), callId).toEqual(call.completion);
    expect(built.stats.trainableTokens).toBe([...engineCalls.values()].reduce((n, c) => n + c.completion.length, 0));
  });

  it("trains one RL step on those ids with the context's trainer", async () => {
    trainer = await openTrainer(ctx, "policy");
    await trainer.load(modelDir);
    const step = await trainOnRollouts(stack.store, results, trainer, ctx.config, 0, { step: 1 });
    const m = step.metrics;
    expect(m["train/skipped"]).toBe(0);
    expect(m["tokens/trainable"]).toBe([...engineCalls.values()].reduce((n, c) => n + c.completion.length, 0));
    expect(Number.isFinite(m.loss)).toBe(true);
    expect(m.grad_norm).toBeGreaterThan(0);
    expect(step.learnability).toBeGreaterThan(0);
  }, 300_000);
});
