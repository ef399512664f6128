import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseRunConfig } from "../../src/train/config.js";
// @ts-expect-error -- a plain .mjs script without types
import { gpuCheckConfig } from "../../scripts/gpu-check-config.mjs";

describe("scripts/gpu-check.sh's RL stage config", () => {
  it("is the quickstart's task on CUDA in bf16 autocast, 3 steps, no warm start or evaluation, and validates", () => {
    const c = parseRunConfig((gpuCheckConfig as (y: string) => unknown)(readFileSync("configs/quickstart.yaml", "utf8")));
    expect(c.trainer).toMatchObject({ device: "cuda", autocast: "bf16", threads: 1, world_size: 1 });
    expect(c.warm_start).toBeUndefined();
    expect(c.budget).toMatchObject({ steps: 3, tasks_per_step: 2, samples: 4 });
    expect(c.eval).toMatchObject({ before: false, after: false });
    expect(c.tasks.train).toMatch(/^calcrun:train/);
  });
});
