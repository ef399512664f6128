import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaContext, LlamaContextSequence, Token } from "node-llama-cpp";
import { afterAll, describe, expect, it } from "vitest";
import { EngineError } from "../../src/core/errors.js";
import { mulberry32 } from "../../src/core/random.js";
import { exportGguf } from "../../src/gguf/export.js";
import { LockstepBatcher } from "../../src/engine/llamacpp/lockstep-batcher.js";
import { gateOutputReorder } from "../../src/engine/llamacpp/output-reorder-gate.js";
import { llamaRuntime } from "../../src/engine/llamacpp/runtime.js";
import { writeRandomModelDir } from "../../src/weights/random-model.js";
import { startCpuLoad } from "./cpu-load.js";

// The two pieces that make a shared llama.cpp batch correct and batched: unit checks on stand-ins for node-llama-cpp's
// objects, and the reorder race itself on real llama.cpp.
const root = mkdtempSync(join(tmpdir(), "harnessrl-batching-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A fake AddonContext whose sampling jobs finish only when the test says so. */
class FakeNative {
  readonly started: number[] = [];
  readonly pending: (() => void)[] = [];
  decodeBatch(): Promise<void> {
    return Promise.resolve();
  }
  sampleToken(id: number): Promise<number> {
    this.started.push(id);
    const d = deferred();
    this.pending.push(d.resolve);
    return d.promise.then(() => id);
  }
}

describe("gateOutputReorder", () => {
  it("runs the first sampling after each decode alone, then the rest together", async () => {
    const native = new FakeNative();
    const context = { _ctx: native } as unknown as LlamaContext;
    gateOutputReorder(context);
    gateOutputReorder(context); // installing twice must not stack two gates
    const ctx = native as unknown as { decodeBatch(): Promise<void>; sampleToken(id: number): Promise<number> };
    for (let round = 0; round < 2; round++) {
      native.started.length = 0;
      native.pending.length = 0;
      await ctx.decodeBatch();
      const results = [1, 2, 3].map((id) => ctx.sampleToken(id));
      await tick();
      expect(native.started).toEqual([1]);
      native.pending[0]?.();
      await tick();
      expect(native.started).toEqual([1, 2, 3]);
      native.pending.forEach((f) => f());
      expect(await Promise.all(results)).toEqual([1, 2, 3]);
    }
  });

  it("makes every sequence of a real batch sample from its own logits row when llama.cpp must reorder the rows", async () => {
    // 8 sequences each evaluate one token in one decode batch, queued in a shuffled order: llama.cpp's micro-batches
    // take consecutive sequence ids, so its output rows come out in another order and get swapped on first access.
    // 32,768 logits per row make that swap slow enough for the parallel sampling threads to collide: without the gate
    // about 2% of such samples reported a probability from a torn row (31 of 1,600 in one measured run).
    const dir = join(root, "wide");
    writeRandomModelDir(dir, { modelType: "qwen3", hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 128, seed: 11, std: 0.15, vocabSize: 32768 });
    const file = join(root, "wide.gguf");
    exportGguf(dir, file);
    const model = await (await llamaRuntime()).loadModel({ modelPath: file, gpuLayers: 0 });
    const stopLoad = startCpuLoad(2);
    try {
      const context = await model.createContext({ sequences: 8, contextSize: 256, threads: 1, flashAttention: false, failedCreationRemedy: false });
      gateOutputReorder(context);
      const seqs = Array.from({ length: 8 }, () => context.getSequence());
      for (const [i, seq] of seqs.entries()) await seq.evaluateWithoutGeneratingNewTokens(Array.from({ length: 3 + i }, (_, k) => ((7 * i + 3 * k + 1) % 256) as Token));
      const settings = (i: number): { temperature: number; topK: number; topP: number; minP: number; seed: number } => ({ temperature: 1, topK: 0, topP: 1, minP: 0, seed: 100 + i });
      // One step: evaluate token 5 + i, sample, then drop it again so every trial starts from the same state.
      const step = async (i: number, probabilities: boolean): Promise<{ token: number; confidence: number; probabilities?: Map<Token, number> }> => {
        const seq = seqs[i] as LlamaContextSequence;
        const it = seq.evaluateWithMetadata([(5 + i) as Token], { confidence: true, probabilities }, { ...settings(i), yieldEogToken: true });
        const out = await it.next();
        await it.return();
        await seq.eraseContextTokenRanges([{ start: seq.nextTokenIndex - 1, end: seq.nextTokenIndex }]);
        if (out.done === true) throw new Error("no token");
        return { token: out.value.token as number, confidence: out.value.confidence, probabilities: (out.value as { probabilities?: Map<Token, number> }).probabilities };
      };
      // Reference: each sequence alone in its batch (one output row, nothing to reorder).
      const alone: Map<Token, number>[] = [];
      for (let i = 0; i < 8; i++) alone.push((await step(i, true)).probabilities ?? new Map());
      const rand = mulberry32(3);
      let worst = 0;
      for (let trial = 0; trial < 200; trial++) {
        const order = [0, 1, 2, 3, 4, 5, 6, 7].sort(() => rand() - 0.5);
        const results = await Promise.all(order.map(async (i) => ({ i, r: await step(i, false) })));
        for (const { i, r } of results) worst = Math.max(worst, Math.abs(Math.log(r.confidence) - Math.log(alone[i]?.get(r.token as Token) ?? 0)));
      }
      expect(worst).toBeLessThan(1e-3);
      await context.dispose();
    } finally {
      await stopLoad();
      await model.dispose();
    }
  }, 120_000);

  it("refuses a context without node-llama-cpp's internal addon methods", () => {
    expect(() => gateOutputReorder({ _ctx: {} } as unknown as LlamaContext)).toThrow(EngineError);
    expect(() => gateOutputReorder({} as unknown as LlamaContext)).toThrow(/3\.21\.1/);
  });
});

/** A fake sequence: evaluateWithMetadata yields `count` tokens (id = name * 100 + step), logging each next(). */
function fakeSequence(name: number, log: number[], fail?: number): LlamaContextSequence {
  return {
    evaluateWithMetadata: async function* () {
      for (let step = 0; ; step++) {
        log.push(name);
        await Promise.resolve();
        if (step === fail) throw new Error(`sequence ${name} failed`);
        yield { token: name * 100 + step, confidence: 0.5 };
      }
    },
  } as unknown as LlamaContextSequence;
}
const settings = { temperature: 1, topK: 0, topP: 1, minP: 0, seed: 1 };

describe("LockstepBatcher", () => {
  it("asks every running request for its next token in sequence-id order, one step at a time", async () => {
    const batcher = new LockstepBatcher();
    const log: number[] = [];
    const got = new Map<number, number[]>();
    const run = (name: number, tokens: number): Promise<void> =>
      batcher.run(fakeSequence(name, log), name, [1, 2], settings, (t) => {
        const list = got.get(name) ?? [];
        list.push(t);
        got.set(name, list);
        return list.length < tokens;
      });
    // Joined out of order; 3 stops after 1 token, 2 after 2, 1 after 3.
    await Promise.all([run(3, 1), run(1, 3), run(2, 2)]);
    expect(log).toEqual([1, 2, 3, 1, 2, 1]);
    expect(got.get(1)).toEqual([100, 101, 102]);
    expect(got.get(2)).toEqual([200, 201]);
    expect(got.get(3)).toEqual([300]);
  });

  it("lets a request that arrives mid-step join the next step, and fails only the request whose evaluation failed", async () => {
    const batcher = new LockstepBatcher();
    const log: number[] = [];
    let late: Promise<void> | undefined;
    const first = batcher.run(fakeSequence(5, log), 5, [1], settings, (t) => {
      late ??= batcher.run(fakeSequence(0, log), 0, [1], settings, () => false);
      return t < 502;
    });
    const failing = batcher.run(fakeSequence(7, log, 1), 7, [1], settings, () => true);
    await expect(failing).rejects.toThrow(/sequence 7 failed/);
    await first;
    await late;
    // Step 1: 5 and 7; step 2: 0 (joined), 5, 7 (fails); step 3: 5.
    expect(log).toEqual([5, 7, 0, 5, 7, 5]);
  });

  it("rejects the request whose token handler throws, without stopping the others", async () => {
    const batcher = new LockstepBatcher();
    const log: number[] = [];
    const bad = batcher.run(fakeSequence(1, log), 1, [1], settings, () => {
      throw new Error("handler broke");
    });
    const good = batcher.run(fakeSequence(2, log), 2, [1], settings, (t) => t < 203);
    await expect(bad).rejects.toThrow("handler broke");
    await good;
    expect(log.filter((n) => n === 2)).toHaveLength(4);
  });
});
