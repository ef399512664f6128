import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FAULT_POINTS, faultPoint, setFaultHandler } from "../../src/train/fault.js";
import { EvalJournal } from "../../src/eval/journal.js";
import { RunDir, type RunState } from "../../src/train/run-dir.js";
import { result } from "../advantage/fixtures.js";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();

/** Thrown by the fault handler: nothing after the fault point runs, exactly as after a kill (files stay as written). */
class Killed extends Error {}

/**
 * The orchestrator's commit sequence with files standing in for the trainer's model state: each step writes a policy
 * version and a checkpoint, then commits them with its metrics line; `eval.every` = 2 adds an evaluation commit. Resuming
 * "loads" the checkpoint the state names, failing as the trainer does when it is missing.
 */
async function train(root: string, steps: number): Promise<RunState> {
  const run = new RunDir(root);
  const recovered = run.recover();
  let state: RunState = recovered ?? { version: 1, step: 0, policyVersion: 0, warmStartDone: false, evalBeforeDone: false, taskCursor: 0, checkpoint: null, startedAt: 0, trainMs: 0 };
  if (state.checkpoint && !existsSync(join(state.checkpoint, "trainer_state.json"))) throw new Error(`${state.checkpoint}: no trainer_state.json`);
  if (!existsSync(join(run.policyDir(state.policyVersion), "model.bin"))) {
    if (recovered) throw new Error(`policy v${state.policyVersion} missing`);
    mkdirSync(run.policyDir(0), { recursive: true });
    writeFileSync(join(run.policyDir(0), "model.bin"), "v0");
    state = await run.commit(state, { written: [run.policyDir(0)], step: 0 });
  }
  const evalDue = (s: number): boolean => s > 0 && s % 2 === 0 && s < steps;
  // The evaluation journals 3 results (src/eval/journal.ts), skipping those a killed attempt journaled.
  const evaluate = async (s: number): Promise<void> => {
    const { journal } = EvalJournal.open(run.evalJournalPath(`eval-${s}`), { label: `eval-${s}`, policy: `v${state.policyVersion}`, taskIds: ["t0", "t1", "t2"], harnesses: ["h"], samples: 1 });
    for (const taskId of ["t0", "t1", "t2"]) {
      if (journal.has({ taskId, harness: "h", sample: 0 })) continue;
      journal.append({ ...result(`eval-${s}-${taskId}`, taskId, "h", 1), sample: 0 });
      faultPoint("during-eval", journal.done.length);
    }
    faultPoint("after-eval", s);
    state = await run.commit({ ...state, evalStep: s }, { metrics: [{ phase: "eval", step: s }], step: s });
  };
  if (recovered && evalDue(state.step) && state.evalStep !== state.step) await evaluate(state.step);
  while (state.step < steps) {
    const step = state.step + 1;
    const version = state.policyVersion + 1;
    mkdirSync(run.policyDir(version), { recursive: true });
    writeFileSync(join(run.policyDir(version), "model.bin"), `v${version}`);
    const checkpoint = run.checkpointDir(step);
    mkdirSync(checkpoint, { recursive: true });
    writeFileSync(join(checkpoint, "trainer_state.json"), JSON.stringify({ step }));
    state = await run.commit({ ...state, step, policyVersion: version, taskCursor: step * 2, checkpoint, referenceVersion: 0 }, { written: [run.policyDir(version), checkpoint], metrics: [{ phase: "rl", step }], rollouts: [0, 1].map((i) => ({ rolloutId: `s${step}-${i}` })), step });
    if (evalDue(step)) await evaluate(step);
  }
  return state;
}

function rows(root: string): { phase: string; step: number }[] {
  return readFileSync(join(root, "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { phase: string; step: number });
}

function expectFinished(root: string): void {
  const state = JSON.parse(readFileSync(join(root, "state.json"), "utf8")) as RunState;
  expect(state).toMatchObject({ step: 4, policyVersion: 4, taskCursor: 8, evalStep: 2 });
  expect(rows(root).map((r) => `${r.phase}${r.step}`)).toEqual(["rl1", "rl2", "eval2", "rl3", "rl4"]);
  expect(readdirSync(join(root, "checkpoints"))).toEqual(["step-0004"]);
  expect(readdirSync(join(root, "policy"))).toEqual(["v0000", "v0001", "v0003", "v0004"]);
  expect(readdirSync(root).filter((e) => e.endsWith(".tmp"))).toEqual([]);
  // The evaluation's results once each, also when it was killed after 2 of them.
  expect(readFileSync(join(root, "evals", "eval-2.jsonl"), "utf8").trim().split("\n").slice(1).map((l) => (JSON.parse(l) as { taskId: string }).taskId)).toEqual(["t0", "t1", "t2"]);
  // Every step's rollouts exactly once, also when a step was redone after a kill.
  const rollouts = readFileSync(join(root, "rollouts.jsonl"), "utf8").trim().split("\n").map((l) => (JSON.parse(l) as { rolloutId: string }).rolloutId);
  expect(rollouts).toEqual(["s1-0", "s1-1", "s2-0", "s2-1", "s3-0", "s3-1", "s4-0", "s4-1"]);
}

describe("a run commits state, metrics and checkpoints together", () => {
  afterEach(() => {
    setFaultHandler(null);
    delete process.env.HARNESSRL_FAULT;
  });

  it("an uninterrupted run ends with one metrics line per step and only the kept checkpoint and policies", async () => {
    const root = tempDir("hrl-commit-");
    await train(root, 4);
    expectFinished(root);
  });

  for (const point of FAULT_POINTS) {
    it(`a run killed at ${point} of step 2 resumes to the same final state`, async () => {
      const root = tempDir("hrl-commit-");
      setFaultHandler(() => {
        throw new Killed(point);
      });
      process.env.HARNESSRL_FAULT = `${point}@2`;
      await expect(train(root, 4)).rejects.toThrow(Killed);
      delete process.env.HARNESSRL_FAULT;
      // What the kill left: state.json names step 1 or 2, and the checkpoint it names is on disk.
      const state = JSON.parse(readFileSync(join(root, "state.json"), "utf8")) as RunState;
      expect([1, 2]).toContain(state.step);
      expect(existsSync(join(state.checkpoint ?? "", "trainer_state.json"))).toBe(true);
      await train(root, 4);
      expectFinished(root);
    });
  }

  it("resume drops a torn metrics line, stale tmp files and an orphaned newer checkpoint and policy", async () => {
    const root = tempDir("hrl-commit-");
    await train(root, 2);
    appendFileSync(join(root, "metrics.jsonl"), '{"phase":"rl","st');
    appendFileSync(join(root, "rollouts.jsonl"), '{"rolloutId":"s3-0"}\n{"rollo');
    writeFileSync(join(root, "state.json.tmp"), "{");
    mkdirSync(join(root, "checkpoints", "step-0003"), { recursive: true });
    mkdirSync(join(root, "policy", "v0003"), { recursive: true });
    await train(root, 4);
    expectFinished(root);
  });

  it("a directory with no state starts afresh: nothing in it was committed", async () => {
    const root = tempDir("hrl-commit-");
    mkdirSync(join(root, "policy", "v0000"), { recursive: true });
    writeFileSync(join(root, "policy", "v0000", "model.bin"), "torn");
    writeFileSync(join(root, "metrics.jsonl"), '{"phase":"rl","step":1}\n');
    writeFileSync(join(root, "rollouts.jsonl"), '{"rolloutId":"s1-0"}\n');
    await train(root, 4);
    expectFinished(root);
    expect(readFileSync(join(root, "policy", "v0000", "model.bin"), "utf8")).toBe("v0");
  });
});
