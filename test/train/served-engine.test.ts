import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { LlamaCppEngine } from "../../src/engine/llamacpp/engine.js";
import type { EngineService } from "../../src/engine/service/server.js";
import { buildRunContext } from "../../src/run/context.js";
import { openStore } from "../../src/store/registry.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import { loadRunConfig } from "../../src/train/config.js";
import { runTraining, type RunSummary } from "../../src/train/orchestrator.js";
import { noiseTask } from "./noise-tasks.js";
import { startServedPolicy } from "./served-policy.js";

// A training run whose engine is `harnessrl serve` (engine.kind: llamacpp-http): the trainer pushes every new policy
// version to the service, and the rollouts of each step sample from it and record its instance.
describe("train with engine kind llamacpp-http (harnessrl serve)", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-train-served-"));
  let engine: LlamaCppEngine;
  let service: EngineService;
  let summary: RunSummary;
  let runDir: string;
  afterAll(async () => {
    await service.close();
    await engine.close();
    delete process.env.HARNESSRL_SERVE_TOKEN;
    delete process.env.HARNESSRL_SERVE_ADMIN_TOKEN;
    rmSync(root, { recursive: true, force: true });
  });

  beforeAll(async () => {
    const served = await startServedPolicy(root, { token: "train-gen-token", adminToken: "train-admin-token" });
    ({ engine, service } = served);
    const { start, url } = served;
    process.env.HARNESSRL_SERVE_TOKEN = "train-gen-token";
    process.env.HARNESSRL_SERVE_ADMIN_TOKEN = "train-admin-token";
    const suite = join(root, "suite");
    await writeNativeSuite([0, 1].map((i) => noiseTask(i, "train")), suite);
    const config = join(root, "served.yaml");
    writeFileSync(
      config,
      stringify({
        name: "served",
        seed: 2,
        model: { dir: start },
        engine: { kind: "llamacpp-http", url },
        sampling: { temperature: 1, max_tokens: 24 },
        rollout: { sandbox: "bwrap", concurrency: 4, max_turns: 2, timeout_s: 60, memory_mb: 1024 },
        harnesses: ["chat-agent"],
        tasks: { train: `dir:${suite}` },
        algorithm: { lr: 0.001 },
        budget: { steps: 2, tasks_per_step: 2, samples: 2 },
      }),
    );
    runDir = join(root, "run");
    summary = await runTraining(buildRunContext(loadRunConfig(config), { runDir, configPath: config }), () => undefined);
  }, 600_000);

  it("serves each new policy version before the next step's rollouts, which report it and name the service's engine instance", () => {
    expect(summary.steps).toBe(2);
    expect(summary.policyVersion).toBe(2);
    expect(engine.policyVersion).toBe(2);
    // Both versions were pushed over HTTP (the start was already served).
    expect(engine.loadTimings.map((t) => t.version)).toEqual([0, 1, 2]);
    const store = openStore(`sqlite:${join(runDir, "records.sqlite")}`);
    try {
      const calls = store.listCalls({});
      expect(calls.length).toBeGreaterThan(0);
      for (const c of calls) expect(c.engineInstance).toBe(engine.instanceId);
      expect([...new Set(calls.map((c) => c.policyVersion))].sort()).toEqual([0, 1]);
    } finally {
      store.close();
    }
  });
});
