import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fidelityStats, isFollowUp, qwen3Codec, qwen3StyleScript } from "../../src/bench/fidelity-model.js";
import { registerEngine } from "../../src/engine/registry.js";
import { createScriptedEngine } from "../../src/engine/scripted/index.js";
import { getHarness } from "../../src/harness/index.js";
import { runRollouts } from "../../src/rollout/runner.js";
import { RolloutStack } from "../../src/rollout/stack.js";
import type { Task } from "../../src/tasks/task.js";

/**
 * Real CLIs through the proxy with Qwen3's tokenizer and official template, a scripted model playing Qwen3 in thinking
 * mode (`<think>` every turn, arguments printed with spaces, `description` first): every follow-up of a 3-tool-turn
 * task extends its parent token for token, and the turns the CLI re-serialised are realigned, not breaks. The full
 * table per CLI and protocol is `npm run bench:fidelity` (docs/history.md).
 */
const TURNS = 3;
let stack: RolloutStack;

function notesTask(): Task {
  return {
    id: "notes",
    family: "harness-test",
    split: "test",
    prompt: `Append ${TURNS} short notes to notes.txt with your shell tool, one command per turn, then stop.`,
    files: { "README.md": "A workspace for the Qwen3 fidelity test.\n" },
    verifier: { files: {}, command: ["sh", "-c", `[ "$(wc -l < notes.txt)" -ge ${TURNS} ] && echo '{"score":1,"subscores":{}}' || echo '{"score":0,"subscores":{}}'`] },
    metadata: {},
  };
}

beforeAll(async () => {
  const codec = qwen3Codec();
  registerEngine({ name: "test-qwen3-fidelity", summary: "Qwen3-style scripted model", create: async () => createScriptedEngine(qwen3StyleScript(TURNS), { modelId: "policy", codec }) });
  stack = await RolloutStack.open({ engine: "test-qwen3-fidelity:", codec, store: "memory", sandbox: "bwrap", sampling: { maxTokens: 512 } });
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

describe("real CLIs with Qwen3's template: follow-ups extend their parent token for token", () => {
  // pi (Chat Completions, re-serialises arguments) and Codex (Responses, sends them back verbatim): the fastest two.
  for (const [name, realigned] of [["pi", 3], ["codex", 0]] as const) {
    it(`${name}: ${TURNS} tool turns with <think>, every follow-up token-exact, ${realigned} turns realigned`, { timeout: 10 * 60_000 }, async () => {
      const harness = getHarness(name);
      await harness.ensureInstalled();
      const [result] = await runRollouts(stack, { tasks: [notesTask()], harnesses: [name], samples: 1, idPrefix: `q3${Date.now().toString(36)}` }, { concurrency: 1, settings: { harnessTimeoutMs: 180_000, maxTurns: TURNS + 3, maxTokens: 512 } });
      expect(result?.status, JSON.stringify({ detail: result?.harnessDetail, error: result?.error })).toBe("ok");
      const calls = stack.store.listCalls({ rolloutId: result!.rolloutId });
      expect(calls.filter(isFollowUp).length).toBeGreaterThanOrEqual(TURNS);
      const stats = fidelityStats(calls);
      expect(stats.breaks).toEqual({});
      expect(stats.exact).toBe(stats.followUps);
      expect(stats.realignedTurns).toBe(realigned);
      // Every sampled turn opened with its reasoning, and the CLI sent it back (it is in the next prompt).
      for (const c of calls) expect(c.response?.reasoning).toBeTruthy();
    });
  }
});
