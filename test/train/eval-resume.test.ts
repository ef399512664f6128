import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { EvalSummary } from "../../src/eval/metrics.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { noiseTask } from "./noise-tasks.js";
import { readRunState, trainCli } from "./run-files.js";

const root = mkdtempSync(join(tmpdir(), "hrl-evalresume-"));
const runDir = join(root, "run");
const configPath = join(root, "run.yaml");
const journal = join(runDir, "evals", "eval-before.jsonl");
const journalLines = (): string[] => readFileSync(journal, "utf8").trim().split("\n");
const results = (): RolloutResult[] => journalLines().slice(1).map((l) => JSON.parse(l) as RolloutResult);

describe("a run killed in the middle of its held-out evaluation resumes it with the rollouts that finished (tiny preset, CLI)", () => {
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("killed after 2 of 6 evaluation rollouts, the resumed run evaluates only the other 4 and reports all 6", async () => {
    const suite = join(root, "suite");
    await writeNativeSuite([0].map((i) => noiseTask(i, "train")), join(suite, "train"));
    await writeNativeSuite([0, 1, 2].map((i) => noiseTask(i, "test")), join(suite, "test"));
    writeFileSync(
      configPath,
      stringify({
        name: "eval-resume",
        seed: 1,
        model: { preset: "tiny-1m", seed: 3 },
        engine: { kind: "llamacpp", threads: 1, sequences: 2 },
        sampling: { temperature: 1, max_tokens: 16 },
        // One at a time: the kill finds exactly the two journaled results and nothing in flight.
        rollout: { sandbox: "bwrap", concurrency: 1, max_turns: 1, timeout_s: 60, memory_mb: 1024 },
        harnesses: ["chat-agent"],
        tasks: { train: `dir:${join(suite, "train")}` },
        algorithm: { lr: 0.01 },
        budget: { steps: 1, tasks_per_step: 1, samples: 2 },
        eval: { tasks: `dir:${join(suite, "test")}`, samples: 2, before: true, after: false },
      }),
    );

    const killed = trainCli(configPath, runDir, { HARNESSRL_FAULT: "during-eval@2" }, 300_000);
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    expect(readRunState(runDir)).toMatchObject({ step: 0, evalBeforeDone: false });
    const header = journalLines()[0];
    expect(JSON.parse(header ?? "")).toMatchObject({ journal: "harnessrl-eval", label: "eval-before", policy: "v0" });
    const before = results();
    expect(before.map((r) => r.rolloutId)).toEqual(["eval-before-noise-test-0-chat-agent-0", "eval-before-noise-test-0-chat-agent-1"]);

    const resumed = trainCli(configPath, runDir, {}, 300_000);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain("eval-before: resuming with 2 of 6 rollouts already evaluated");
    expect(readRunState(runDir)).toMatchObject({ step: 1, evalBeforeDone: true });

    // The first two results are kept as they were; the other four ran once each, under ids of the resumed attempt.
    const all = results();
    expect(journalLines()[0]).toBe(header);
    expect(all.slice(0, 2)).toEqual(before);
    expect(all).toHaveLength(6);
    const resumedIds = all.slice(2).map((r) => r.rolloutId);
    expect(resumedIds.every((id) => /^eval-before-r[0-9a-z]+-noise-test-[12]-chat-agent-[01]$/.test(id)), resumedIds.join(" ")).toBe(true);
    expect(new Set(all.map((r) => `${r.taskId}/${r.sample}`)).size).toBe(6);

    // The summary is over all six, the score of each exactly the journaled one.
    const summary = JSON.parse(readFileSync(join(runDir, "eval-before.json"), "utf8")) as EvalSummary;
    expect(summary.overall.rollouts).toBe(6);
    const valid = all.filter((r) => r.status !== "infra_error");
    expect(summary.overall.meanScore).toBeCloseTo(valid.reduce((s, r) => s + r.score, 0) / valid.length, 9);
  }, 900_000);
});
