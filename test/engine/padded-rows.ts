import { join } from "node:path";
import { expect } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import { DEFAULT_SAMPLING } from "../../src/engine/types.js";
import { TINY_VOCAB, writeRandomModelDir } from "../../src/weights/random-model.js";
import type { FakeServer } from "./fake-inference-servers.js";

/** Embedding rows past the tiny tokenizer's ids in the padded model. */
const PADDED_ROWS = 35;

/** The small random model directory the remote-engine tests point their adapters at (its config and tokenizer). */
export function writeRemoteModelDir(dir: string, vocabSize?: number): void {
  writeRandomModelDir(dir, { modelType: "qwen3", hiddenSize: 16, numLayers: 1, numHeads: 2, numKvHeads: 1, intermediateSize: 32, seed: 1, ...(vocabSize === undefined ? {} : { vocabSize }) });
}

/**
 * The remote adapters' padded-vocabulary check (vLLM and SGLang place the bias differently; `biasOf` finds it in a
 * request body): over a model with padded rows every row without text gets −100 and no row with text does; over the
 * unpadded `modelDir` no bias is sent at all.
 */
export async function expectPaddedRowsBiased(kind: "vllm" | "sglang", server: FakeServer, root: string, modelDir: string, biasOf: (body: Record<string, unknown>) => Record<string, number> | undefined): Promise<void> {
  const padded = join(root, "padded");
  writeRemoteModelDir(padded, TINY_VOCAB + PADDED_ROWS);
  for (const [dir, expected] of [[padded, PADDED_ROWS], [modelDir, 0]] as const) {
    const engine = await createEngine(`${kind}:${server.url}?model_dir=${dir}`);
    try {
      await engine.generate({ promptTokens: [257, 117, 10], params: { ...DEFAULT_SAMPLING, maxTokens: 3 } });
      const bias = biasOf(server.requests.at(-1)?.body ?? {});
      expect(Object.keys(bias ?? {}).length, dir).toBe(expected);
      if (expected > 0) expect([bias?.[String(TINY_VOCAB)], bias?.[String(TINY_VOCAB + PADDED_ROWS - 1)], bias?.[String(TINY_VOCAB - 1)]]).toEqual([-100, -100, undefined]);
    } finally {
      await engine.close();
    }
  }
}
