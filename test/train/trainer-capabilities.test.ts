import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildRunContext } from "../../src/run/context.js";
import { loadRunConfig } from "../../src/train/config.js";
import { runTraining } from "../../src/train/orchestrator.js";
import { createTrainer, registerTrainer } from "../../src/trainer/index.js";
import { coreOnly } from "../trainer/core-only.js";

// A backend with the core contract only (a view of the torch trainer), registered like any adapter.
registerTrainer({ name: "torch-core-only", summary: "test: the torch trainer without its optional capabilities", create: async (arg, options) => coreOnly(await createTrainer(arg ? `torch:${arg}` : "torch", options)) });

describe("a run whose config needs a capability its trainer lacks", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-capability-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("fails at its start with the setting that asked for it, before any model, warm start or rollout", async () => {
    const base = loadRunConfig("configs/quickstart-ppo.yaml");
    const config = { ...base, trainer: { ...base.trainer, kind: "torch-core-only" } };
    const runRoot = join(root, "ppo");
    const err = await runTraining(buildRunContext(config, { runDir: runRoot }), () => undefined).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "unsupported_trainer_capability", details: { capability: "critic", backend: "core-only" } });
    expect((err as Error).message).toMatch(/advantage estimator "ppo" needs the trainer capability "critic"/);
    // Nothing was created: no policy, no checkpoint, no store.
    expect(existsSync(runRoot) ? readdirSync(runRoot).filter((f) => f !== "config.yaml") : []).toEqual([]);
  });
});
