import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import type { RunState } from "../../src/train/run-dir.js";
import { noiseTask } from "./noise-tasks.js";
import { metricSteps, readRunState, trainCli } from "./run-files.js";

const root = mkdtempSync(join(tmpdir(), "hrl-rank-kill-"));
const runDir = join(root, "run");
const configPath = join(root, "run.yaml");

const train = (fault?: string): ReturnType<typeof trainCli> => trainCli(configPath, runDir, fault ? { HARNESSRL_RANK_FAULT: fault } : {}, 600_000);
const state = (): RunState => readRunState(runDir);
const lines = (): string[] => metricSteps(runDir);

describe("a run whose trainer rank dies mid-step (2 gloo ranks, tiny preset, CLI)", () => {
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("fails that step with trainer_rank_failed and resumes from the last checkpoint on all ranks", async () => {
    const suite = join(root, "suite");
    await writeNativeSuite([0, 1].map((i) => noiseTask(i, "train")), join(suite, "train"));
    writeFileSync(
      configPath,
      stringify({
        name: "rank-kill",
        seed: 1,
        model: { preset: "tiny-1m", seed: 3 },
        trainer: { threads: 1, world_size: 2 },
        engine: { kind: "llamacpp", threads: 1, sequences: 4 },
        sampling: { temperature: 1, max_tokens: 16 },
        rollout: { sandbox: "bwrap", concurrency: 2, max_turns: 1, timeout_s: 60, memory_mb: 1024 },
        harnesses: ["chat-agent"],
        tasks: { train: `dir:${join(suite, "train")}` },
        algorithm: { lr: 0.01 },
        budget: { steps: 2, tasks_per_step: 1, samples: 2 },
      }),
    );

    // Rank 1 dies on receiving step 2's optimizer step, after its forward_backward: the step fails, step 1 stays.
    const first = train("1:optim_step:2");
    expect(first.status, first.stderr).not.toBe(0);
    expect(first.stderr).toMatch(/trainer_rank_failed|a trainer rank failed/);
    expect(first.stderr).toMatch(/restart the trainer and load the last checkpoint/);
    expect(state()).toMatchObject({ step: 1, policyVersion: 1 });
    expect(lines()).toEqual(["rl1"]);

    const last = train();
    expect(last.status, last.stderr).toBe(0);
    expect(state()).toMatchObject({ step: 2, policyVersion: 2 });
    expect(lines()).toEqual(["rl1", "rl2"]);
  }, 1_200_000);
});
