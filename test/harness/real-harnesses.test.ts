import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerEngine } from "../../src/engine/registry.js";
import { createScriptedEngine, type ScriptRequest, type ScriptReply } from "../../src/engine/scripted/index.js";
import { getHarness, registerHarness } from "../../src/harness/index.js";
import { REAL_HARNESS_SHELL_TOOLS, commandHarnessFromSpec, createCommandHarness } from "../../src/harness/real/index.js";
import type { HarnessDefinition } from "../../src/harness/types.js";
import { runRollouts } from "../../src/rollout/runner.js";
import { RolloutStack } from "../../src/rollout/stack.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import type { CallRecord } from "../../src/icr/records.js";
import type { Task } from "../../src/tasks/task.js";

/**
 * Each real harness CLI (pinned npm package, installed here if missing) runs a two-turn task in a bwrap sandbox
 * against the capture proxy: the scripted "model" calls the harness's own shell tool to create a file, then finishes;
 * the verifier must see the file and the store must hold the harness's calls in its protocol.
 */

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "fixtures");
const PROOF = "harnessrl-proof-7f3a";
const COMMAND = `printf '${PROOF}\\n' > proof.txt`;

/** Each harness's own shell tool and the argument that carries the command line. */
const SHELL_TOOL: Record<string, { tool: string; arg: string }> = {
  ...REAL_HARNESS_SHELL_TOOLS,
  "test-command-argv": { tool: "shell", arg: "command" },
  "test-command-anthropic": { tool: "shell", arg: "command" },
};

interface Seen {
  harness: string;
  tools: string[];
  toolResult: string | null;
}
const seen: Seen[] = [];

/** Plays the model: turn 1 calls the harness's shell tool (found in the request's tools), turn 2 finishes. */
function script(req: ScriptRequest): ScriptReply {
  const harness = req.harness ?? "?";
  const toolMessage = req.messages.find((m) => m.role === "tool");
  seen.push({ harness, tools: req.tools.map((t) => t.name), toolResult: toolMessage ? toolMessage.content : null });
  // Side calls without tools (titles, summaries) and the turn after the tool result get a plain answer.
  if (toolMessage || req.tools.length === 0) return { content: "Done." };
  const want = SHELL_TOOL[harness];
  const tool = want ? req.tools.find((t) => t.name === want.tool) : undefined;
  if (!want || !tool) return { content: `no shell tool among ${req.tools.map((t) => t.name).join(",")}` };
  return { toolCalls: [{ name: tool.name, arguments: { [want.arg]: COMMAND } }] };
}

function proofTask(): Task {
  return {
    id: "proof",
    family: "harness-test",
    split: "test",
    prompt: `Create a file named proof.txt in the current directory containing exactly the line ${PROOF}.`,
    files: { "README.md": "A workspace for the real-harness test.\n" },
    verifier: {
      files: {},
      command: ["sh", "-c", `if [ "$(cat proof.txt 2>/dev/null)" = ${PROOF} ]; then echo '{"score":1,"subscores":{"file":1}}'; else echo '{"score":0,"subscores":{"file":0}}'; fi`],
    },
    metadata: {},
  };
}

let stack: RolloutStack;

beforeAll(async () => {
  registerEngine({ name: "test-real-harness", summary: "scripted model for the real-harness tests", create: async () => createScriptedEngine(script, { modelId: "policy" }) });
  stack = await RolloutStack.open({ engine: "test-real-harness:", store: "memory", sandbox: "bwrap", sampling: { maxTokens: 256 } });
});

afterAll(async () => {
  await stack?.close();
});

async function runOne(harness: HarnessDefinition, outputLimit = 256 * 1024): Promise<{ result: RolloutResult; calls: CallRecord[] }> {
  const [result] = await runRollouts(
    stack,
    { tasks: [proofTask()], harnesses: [harness.name], samples: 1, idPrefix: `t${Date.now().toString(36)}` },
    { concurrency: 1, settings: { harnessTimeoutMs: 240_000, maxTurns: 6, outputLimit } },
  );
  if (!result) throw new Error("no rollout result");
  return { result, calls: stack.store.listCalls({ rolloutId: result.rolloutId }) };
}

function explain(result: RolloutResult): string {
  return JSON.stringify({ status: result.status, detail: result.harnessDetail, error: result.error, exit: result.exitCode, stderr: result.stderr.slice(-1500), stdout: result.stdout.slice(-1500) }, null, 1);
}

function expectTwoTurnRollout(harness: HarnessDefinition, result: RolloutResult, calls: CallRecord[]): void {
  expect(result.status, explain(result)).toBe("ok");
  expect(result.verifier?.subscores.file).toBe(1);
  // Turn 1 (tool call) and turn 2 (final answer) at least; side calls may add more.
  expect(calls.length).toBeGreaterThanOrEqual(2);
  expect(result.calls).toBe(calls.length);
  for (const c of calls) {
    expect(c.status).toBe("ok");
    expect(c.protocol).toBe(harness.protocol);
    expect(c.harness).toBe(harness.name);
    expect(c.completionTokens.length).toBeGreaterThan(0);
  }
  const want = SHELL_TOOL[harness.name]!;
  const toolCall = calls.find((c) => c.response?.toolCalls?.some((t) => t.name === want.tool));
  expect(toolCall, `no recorded call answered with ${want.tool}`).toBeDefined();
  // The harness really ran the tool and sent its result back in a later call.
  const after = seen.filter((s) => s.harness === harness.name && s.toolResult !== null);
  expect(after.length).toBeGreaterThanOrEqual(1);
}

describe("real harness CLIs in bwrap sandboxes against the capture proxy", () => {
  for (const name of ["claude-code", "codex", "qwen-code", "pi", "openclaw"]) {
    it(`${name}: turn 1 writes a file with its own shell tool, turn 2 finishes, the verifier sees the file`, { timeout: 30 * 60_000 }, async () => {
      const harness = getHarness(name);
      expect(harness.kind).toBe("real");
      // Installs the pinned package on a fresh machine (CI); a no-op once installed.
      await harness.ensureInstalled();
      const { result, calls } = await runOne(harness);
      expectTwoTurnRollout(harness, result, calls);
      const first = seen.find((s) => s.harness === name && s.tools.length > 0);
      expect(first?.tools).toContain(SHELL_TOOL[name]!.tool);
    });
  }
});

describe("real harness output cut by the runner's output bounding", () => {
  // Claude Code's result event is 2–3 KB; pi's agent_end repeats the whole conversation (~1.5 KB here, far more in
  // real tasks). With less tail kept than that, they arrive cut at their start; finished() must still read the end.
  // The runner keeps half the limit as tail: Claude Code's event varies in size (ids, timings, usage), so its limit
  // keeps a tail (1.5 KB) well below the smallest event seen, or the event would sometimes arrive whole.
  for (const [name, limit] of [["claude-code", 3072], ["pi", 1024]] as const) {
    it(`${name}: a cut final event still counts as a normal end`, { timeout: 10 * 60_000 }, async () => {
      const harness = getHarness(name);
      await harness.ensureInstalled();
      const { result, calls } = await runOne(harness, limit);
      expect(result.stdout).toContain("bytes omitted");
      expect(result.harnessDetail).toContain("cut by output bounding");
      expectTwoTurnRollout(harness, result, calls);
    });
  }
});

describe("the generic command harness", () => {
  it("runs a program from an argv template that honours OPENAI_BASE_URL (Chat Completions)", async () => {
    const def = createCommandHarness({ name: "test-command-argv", command: [process.execPath, join(FIXTURES, "mini-agent.mjs"), "{prompt}"], hostPaths: [FIXTURES] });
    registerHarness(def);
    const { result, calls } = await runOne(def);
    expectTwoTurnRollout(def, result, calls);
    expect(result.stdout).toContain('"final":"Done."');
    expect(calls.every((c) => !c.stream)).toBe(true);
  });

  it("runs a shell command line (command:<line>) that honours ANTHROPIC_BASE_URL (Messages)", async () => {
    const spec = commandHarnessFromSpec(`command:${process.execPath} ${join(FIXTURES, "mini-agent.mjs")} --anthropic "$HARNESSRL_PROMPT"`);
    const def: HarnessDefinition = { ...spec, name: "test-command-anthropic", protocol: "anthropic-messages", hostPaths: () => [FIXTURES] };
    registerHarness(def);
    const { result, calls } = await runOne(def);
    expectTwoTurnRollout(def, result, calls);
  });

  it("reports a program that exits non-zero as a harness crash, with its stderr", async () => {
    const def = createCommandHarness({ name: "test-command-fails", command: "echo 'cannot reach model' >&2; exit 3" });
    registerHarness(def);
    const { result } = await runOne(def);
    expect(result.status).toBe("harness_crash");
    expect(result.harnessDetail).toBe("exit 3 cannot reach model");
  });
});

describe("real harness CLIs that cannot reach the model end as classified crashes", () => {
  for (const name of ["claude-code", "codex", "pi", "qwen-code", "openclaw"]) {
    it(`${name}: a credential the proxy rejects ends the run as harness_crash with the CLI's own error, nothing recorded`, { timeout: 10 * 60_000 }, async () => {
      const real = getHarness(name);
      await real.ensureInstalled();
      const def: HarnessDefinition = { ...real, name: `${name}-bad-key`, launch: (ctx) => real.launch({ ...ctx, apiKey: "sk-not-issued-by-the-proxy" }) };
      registerHarness(def);
      const { result, calls } = await runOne(def);
      expect(result.status, explain(result)).toBe("harness_crash");
      // finished() read the CLI's own account of the failure: the proxy's 401.
      expect(result.harnessDetail).toContain("401");
      expect(result.verifier?.score).toBe(0);
      expect(calls).toHaveLength(0);
    });
  }
});
