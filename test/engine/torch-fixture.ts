import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { createTrainer } from "../../src/trainer/index.js";
import type { Trainer } from "../../src/trainer/types.js";

/**
 * One PyTorch worker and one scratch folder for a test file that compares an engine with the worker: the folder is
 * made at once (model directories can be written at import), the worker started before the file's tests; both are
 * closed and removed after them.
 */
export function useTorchTrainer(prefix: string): { readonly root: string; readonly trainer: Trainer } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  let trainer: Trainer | undefined;
  beforeAll(async () => {
    trainer = await createTrainer("torch");
  }, 120_000);
  afterAll(async () => {
    try {
      await trainer?.close();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
  return {
    root,
    get trainer(): Trainer {
      if (!trainer) throw new Error("the torch trainer starts in beforeAll; use it inside a test");
      return trainer;
    },
  };
}
