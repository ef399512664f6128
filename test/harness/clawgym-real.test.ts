import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerEngine } from "../../src/engine/registry.js";
import { createScriptedEngine, type ScriptRequest, type ScriptReply } from "../../src/engine/scripted/index.js";
import { getHarness, registerHarness } from "../../src/harness/index.js";
import { createCommandHarness, REAL_HARNESS_SHELL_TOOLS } from "../../src/harness/real/index.js";
import { runRollouts } from "../../src/rollout/runner.js";
import { RolloutStack } from "../../src/rollout/stack.js";
import { loadSuite } from "../../src/tasks/registry.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { SOLUTIONS, VARIANTS, type Variant } from "../tasks/clawgym-solutions.js";

/**
 * The example ClawGym-Bench tasks (examples/clawgym, loaded by suite spec) through real harness CLIs in bwrap sandboxes
 * against the capture proxy. The scripted "model" sends one command to the CLI's own shell tool: the full solution, a
 * partial one, or a wrong one that also plants a fake grader and a usercustomize.py in the sandbox's HOME to forge the
 * reward. Each harness runs every task once and every variant once (a Latin square, shifted per harness, so the two
 * harnesses cover different task × variant cells; 6 rollouts keep the test within a few minutes on a loaded machine;
 * all 9 cells are graded directly in test/tasks/clawgym-examples.test.ts). Each rollout's score (in the result and in
 * the results file a run writes) must be exactly what the task's own grader gives that solution.
 */

const EXAMPLES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "examples", "clawgym");
const HARNESSES = ["pi", "claude-code"] as const;

const TASK_IDS = Object.keys(SOLUTIONS).sort();

/** The variant a harness plays on a task: (task index + harness index) mod 3. */
function variantOf(taskId: string, harness: string): Variant | undefined {
  const t = TASK_IDS.indexOf(taskId);
  const h = (HARNESSES as readonly string[]).indexOf(harness);
  return t < 0 || h < 0 ? undefined : VARIANTS[(t + h) % VARIANTS.length];
}

function script(req: ScriptRequest): ScriptReply {
  // Side calls without tools (titles, summaries) and the turn after the tool result get a plain answer.
  if (req.tools.length === 0 || req.messages.some((m) => m.role === "tool")) return { content: "Done." };
  const want = REAL_HARNESS_SHELL_TOOLS[req.harness ?? ""];
  // Rollout ids are `<prefix>-<task>-<harness>-<sample>`.
  const taskId = TASK_IDS.find((id) => (req.rolloutId ?? "").includes(`-${id}-`));
  const variant = taskId ? variantOf(taskId, req.harness ?? "") : undefined;
  if (!want || !taskId || !variant || !req.tools.some((t) => t.name === want.tool)) return { content: `cannot plan ${req.rolloutId ?? "?"}` };
  return { toolCalls: [{ name: want.tool, arguments: { [want.arg]: SOLUTIONS[taskId]![variant].command } }] };
}

let stack: RolloutStack;
let tmp: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "hrl-clawgym-real-"));
  registerEngine({ name: "test-clawgym-real", summary: "scripted model for the ClawGym real-harness test", create: async () => createScriptedEngine(script, { modelId: "policy" }) });
  stack = await RolloutStack.open({ engine: "test-clawgym-real:", store: "memory", sandbox: "bwrap", sampling: { maxTokens: 4096 } });
});

afterAll(async () => {
  await stack?.close();
  await rm(tmp, { recursive: true, force: true });
});

function explain(r: RolloutResult): string {
  return JSON.stringify({ id: r.rolloutId, status: r.status, score: r.score, verifier: r.verifier, detail: r.harnessDetail, error: r.error, stderr: r.stderr.slice(-800) }, null, 1);
}

describe("ClawGym-Bench example tasks through real harness CLIs", () => {
  it(`${HARNESSES.join(" and ")}: full, partial and forging solutions through the CLI's shell tool get exactly the grader's score`, { timeout: 10 * 60_000 }, async () => {
    const suite = await loadSuite(`dir:${EXAMPLES}:test`);
    expect(suite.tasks.map((t) => t.id).sort()).toEqual(Object.keys(SOLUTIONS).sort());
    for (const h of HARNESSES) await getHarness(h).ensureInstalled();
    const resultsFile = join(tmp, "rollouts.jsonl");
    const started = Date.now();
    const results = await runRollouts(
      stack,
      { tasks: suite.tasks, harnesses: HARNESSES, samples: 1, idPrefix: `cg${Date.now().toString(36)}` },
      { concurrency: 3, resultsFile, settings: { harnessTimeoutMs: 240_000, maxTurns: 4, maxTokens: 4096 } },
    );
    const wallS = (Date.now() - started) / 1000;
    expect(results).toHaveLength(suite.tasks.length * HARNESSES.length);
    // Every harness played every variant.
    for (const h of HARNESSES) expect(new Set(results.filter((r) => r.harness === h).map((r) => variantOf(r.taskId, h)))).toEqual(new Set(VARIANTS));
    const logged = new Map<string, RolloutResult>();
    for (const line of (await readFile(resultsFile, "utf8")).split("\n").filter((l) => l)) {
      const r = JSON.parse(line) as RolloutResult;
      logged.set(r.rolloutId, r);
    }
    const table: string[] = [];
    for (const r of results) {
      const variant = variantOf(r.taskId, r.harness)!;
      const want = SOLUTIONS[r.taskId]![variant];
      table.push(`${r.harness} ${r.taskId} ${variant} ${r.score} ${r.status} ${((r.timings.endedAt - r.timings.startedAt) / 1000).toFixed(1)}s`);
      expect(r.verifier, explain(r)).toEqual({ score: want.score, subscores: want.subscores });
      expect(r.score, explain(r)).toBe(want.score);
      expect(r.status, explain(r)).toBe(want.score === 1 ? "ok" : "task_failed");
      expect(logged.get(r.rolloutId)?.score).toBe(want.score);
      // The command went through the harness's own shell tool, recorded by the proxy.
      const calls = stack.store.listCalls({ rolloutId: r.rolloutId });
      const tool = REAL_HARNESS_SHELL_TOOLS[r.harness]!.tool;
      expect(calls.some((c) => c.response?.toolCalls?.some((t) => t.name === tool)), explain(r)).toBe(true);
      expect(r.calls).toBe(calls.length);
    }
    console.log(`${results.length} rollouts in ${wallS.toFixed(1)} s (concurrency 3)\n${table.join("\n")}`);
  });

  it("an agent that plants a symlink or a FIFO where the verifier goes is still graded by it (not an infra error)", { timeout: 5 * 60_000 }, async () => {
    const suite = await loadSuite(`dir:${EXAMPLES}`);
    const task = suite.tasks.find((t) => t.id === "cg-log-summary")!;
    const solve = SOLUTIONS[task.id]!.full.command;
    const plants = {
      "plants-harnessrl-symlink": `${solve} && ln -s /tmp .harnessrl`,
      "plants-verifier-fifo": `${solve} && mkdir -p .harnessrl/verifier && mkfifo .harnessrl/verifier/clawgym_adapter.cjs`,
    };
    for (const [name, command] of Object.entries(plants)) registerHarness(createCommandHarness({ name, command }));
    const results = await runRollouts(stack, { tasks: [task], harnesses: Object.keys(plants), samples: 1, idPrefix: `plant${Date.now().toString(36)}` }, { concurrency: 2, settings: { harnessTimeoutMs: 60_000 } });
    for (const r of results) {
      expect(r.status, explain(r)).toBe("ok");
      expect(r.verifier, explain(r)).toEqual({ score: 1, subscores: SOLUTIONS[task.id]!.full.subscores });
    }
  });
});
