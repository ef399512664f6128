import { describe, expect, it } from "vitest";
import { fewStepsAdvice } from "../../src/train/warm-start.js";

describe("the warm start's warning about too few SFT steps", () => {
  it("warns when a real CLI's demonstrations pack into a couple of rows (pi: 100 demos in two 8k rows)", () => {
    const advice = fewStepsAdvice({ demos: 100, rows: 2, perEpoch: 2, total: 16, rowTokens: 8192 });
    expect(advice).toContain("100 demonstrations pack into 2 rows of <= 8192 tokens (~50 per row");
    expect(advice).toContain("only 2 optimizer step(s) per epoch, 16 in all");
    expect(advice).toContain("warm_start.row_tokens");
    expect(advice).toContain("raise warm_start.epochs");
  });

  it("is silent when many epochs already buy the steps (Qwen Code: 60 demos in three 20k rows, 20 epochs)", () => {
    expect(fewStepsAdvice({ demos: 60, rows: 3, perEpoch: 3, total: 60, rowTokens: 20480 })).toBeUndefined();
    expect(fewStepsAdvice({ demos: 60, rows: 3, perEpoch: 3, total: 18, rowTokens: 20480 })).toContain("raise warm_start.epochs");
  });

  it("is silent when each epoch has several steps (pi with 2k rows: 17 per epoch)", () => {
    expect(fewStepsAdvice({ demos: 100, rows: 17, perEpoch: 17, total: 170, rowTokens: 2048 })).toBeUndefined();
  });

  it("is silent when there are too few demonstrations to split further (one demo; three per row)", () => {
    expect(fewStepsAdvice({ demos: 1, rows: 1, perEpoch: 1, total: 1, rowTokens: 8192 })).toBeUndefined();
    expect(fewStepsAdvice({ demos: 6, rows: 2, perEpoch: 2, total: 4, rowTokens: 8192 })).toBeUndefined();
  });
});
