import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { PROGRESS_FILE, readProgressFile } from "../../src/core/progress-file.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import type { RunState } from "../../src/train/run-dir.js";
import { noiseTask } from "./noise-tasks.js";
import { metricSteps, readRunState, trainCli } from "./run-files.js";

const root = mkdtempSync(join(tmpdir(), "hrl-kill-"));
const runDir = join(root, "run");
const configPath = join(root, "run.yaml");

const train = (fault?: string): ReturnType<typeof trainCli> => trainCli(configPath, runDir, fault ? { HARNESSRL_FAULT: fault } : {}, 300_000);
const state = (): RunState => readRunState(runDir);
const lines = (): string[] => metricSteps(runDir);

describe("a training run killed at its commit boundaries resumes without losing a step (tiny preset, CLI)", () => {
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("killed during the evaluation after step 1, before and after the switch to step 2, it ends with every step (and its rollouts) once", async () => {
    const suite = join(root, "suite");
    await writeNativeSuite([0, 1].map((i) => noiseTask(i, "train")), join(suite, "train"));
    await writeNativeSuite([0].map((i) => noiseTask(i, "test")), join(suite, "test"));
    writeFileSync(
      configPath,
      stringify({
        name: "kill",
        seed: 1,
        model: { preset: "tiny-1m", seed: 3 },
        engine: { kind: "llamacpp", threads: 1, sequences: 4 },
        sampling: { temperature: 1, max_tokens: 16 },
        rollout: { sandbox: "bwrap", concurrency: 2, max_turns: 1, timeout_s: 60, memory_mb: 1024 },
        harnesses: ["chat-agent"],
        tasks: { train: `dir:${join(suite, "train")}` },
        algorithm: { lr: 0.01 },
        budget: { steps: 2, tasks_per_step: 1, samples: 2 },
        eval: { tasks: `dir:${join(suite, "test")}`, before: false, after: false, every: 1 },
      }),
    );

    // The reported loss: state written, then killed during the step's evaluation. Step 1 stays committed with its
    // metrics line; the evaluation is not, and the resume runs it again on the same policy.
    const first = train("after-eval@1");
    expect(first.signal, first.stderr).toBe("SIGKILL");
    expect(state()).toMatchObject({ step: 1, policyVersion: 1 });
    expect(lines()).toEqual(["rl1"]);

    // Killed after step 2's rollouts and metrics line were appended but before state.json names step 2: the resume
    // cuts both and redoes the step, whose rollouts then appear once.
    const interrupted = train("after-metrics-append@2");
    expect(interrupted.signal, interrupted.stderr).toBe("SIGKILL");
    expect(state()).toMatchObject({ step: 1, evalStep: 1 });

    // Killed after state.json names step 2 but while the old checkpoint is being deleted: resumable.
    const second = train("during-cleanup@2");
    expect(second.signal, second.stderr).toBe("SIGKILL");
    expect(state()).toMatchObject({ step: 2, policyVersion: 2, evalStep: 1 });
    expect(existsSync(join(state().checkpoint ?? "", "trainer_state.json"))).toBe(true);

    const last = train();
    expect(last.status, last.stderr).toBe(0);
    expect(state()).toMatchObject({ step: 2, policyVersion: 2, evalStep: 1 });
    expect(lines()).toEqual(["rl1", "eval1", "rl2"]);
    expect(readdirSync(join(runDir, "checkpoints"))).toEqual(["step-0002"]);
    expect(readdirSync(join(runDir, "policy"))).toEqual(["v0000", "v0001", "v0002"]);
    expect(readdirSync(runDir).filter((e) => e.endsWith(".tmp"))).toEqual([]);
    // The last resume had no RL step left: nothing it showed in progress.json (the RL steps included) is left over.
    expect(readProgressFile(join(runDir, PROGRESS_FILE))?.tasks).toEqual([]);
    // 2 steps × 1 task × 2 samples, each step's rollouts once (step 2 ran twice).
    const rollouts = readFileSync(join(runDir, "rollouts.jsonl"), "utf8").trim().split("\n").map((l) => (JSON.parse(l) as { rolloutId: string }).rolloutId);
    expect(rollouts).toHaveLength(4);
    expect(rollouts.filter((id) => id.startsWith("s1-"))).toHaveLength(2);
    expect(rollouts.filter((id) => id.startsWith("s2-"))).toHaveLength(2);
  }, 900_000);
});
