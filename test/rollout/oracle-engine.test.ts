import { describe, expect, it } from "vitest";
import { parseAssistantOutput } from "../../src/chat/parse-output.js";
import type { ChatMessage } from "../../src/chat/types.js";
import { EngineError } from "../../src/core/errors.js";
import { newId } from "../../src/core/ids.js";
import { createOracleEngine } from "../../src/rollout/oracle/oracle-engine.js";
import { DEFAULT_SAMPLING, type GenerateContext } from "../../src/engine/types.js";
import { getHarness } from "../../src/harness/index.js";
import { stepAsShellCommand } from "../../src/tasks/shell.js";
import { loadSuite } from "../../src/tasks/registry.js";
import type { Task } from "../../src/tasks/task.js";
import { runEngineContract } from "../engine/engine-contract.js";

// The oracle engine is an engine like any other: it passes the shared engine contract. It answers from the call's
// context (the rollout names the task), so the contract hands it one: a fresh session per call, rollout "r-oracle",
// the chat-agent harness.
const ROLLOUT = "r-oracle";
const HARNESS = "chat-agent";

async function firstTask(): Promise<Task> {
  const [task] = (await loadSuite("mix:train?n=1&seed=5")).tasks;
  if (!task?.metadata.oracle) throw new Error("the generated task has no oracle steps");
  return task;
}

async function oracle(): Promise<{ engine: ReturnType<typeof createOracleEngine>; task: Task }> {
  const task = await firstTask();
  return { engine: createOracleEngine({ taskForRollout: (id) => (id === ROLLOUT ? task : undefined) }), task };
}

const context = (messages: readonly ChatMessage[], over: Partial<GenerateContext> = {}): GenerateContext => ({
  sessionId: newId("ses"),
  callId: newId("call"),
  rolloutId: ROLLOUT,
  harness: HARNESS,
  messages,
  tools: [],
  ...over,
});

runEngineContract({ name: "oracle", create: async () => (await oracle()).engine, sampling: false, context: (messages) => context(messages) });

describe("oracle engine", () => {
  const messages: ChatMessage[] = [{ role: "user", content: "Solve the task." }];

  it("answers a rollout's first call with the task's first step through the harness's shell tool", async () => {
    const { engine, task } = await oracle();
    const step = task.metadata.oracle?.steps[0];
    if (!step) throw new Error("no first step");
    const expected = getHarness(HARNESS).oracle?.shell(stepAsShellCommand(step));
    // The request offers the harness's shell tool (requests without it, like a CLI's title call, get a plain answer).
    const tools = [{ name: expected?.name ?? "?", parameters: { type: "object", properties: { command: { type: "string" } } } }];
    const prompt = engine.tokenizer.encode(engine.renderer.render(messages, tools, { addGenerationPrompt: true }));
    const r = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 4000 }, context: context(messages, { tools }) });
    const parsed = parseAssistantOutput(engine.tokenizer.decode(r.tokens));
    expect(parsed.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments }))).toEqual([expected]);
    await engine.close();
  });

  it("answers a call that does not offer the harness's shell tool (a side call) with plain text, not a step", async () => {
    const { engine } = await oracle();
    const prompt = engine.tokenizer.encode(engine.renderer.render(messages, [], { addGenerationPrompt: true }));
    const r = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 4000 }, context: context(messages) });
    expect(parseAssistantOutput(engine.tokenizer.decode(r.tokens)).toolCalls).toEqual([]);
    await engine.close();
  });

  it("refuses calls outside a rollout, and rollouts whose task it does not know, with engine errors", async () => {
    const { engine } = await oracle();
    const prompt = engine.tokenizer.encode(engine.renderer.render(messages, [], { addGenerationPrompt: true }));
    const params = { ...DEFAULT_SAMPLING, maxTokens: 100 };
    const bare = await engine.generate({ promptTokens: prompt, params }).catch((e: unknown) => e);
    expect(bare).toBeInstanceOf(EngineError);
    expect((bare as EngineError).code).toBe("oracle_no_rollout");
    const unknown = await engine.generate({ promptTokens: prompt, params, context: context(messages, { rolloutId: "r-other" }) }).catch((e: unknown) => e);
    expect((unknown as EngineError).code).toBe("oracle_unknown_task");
    await engine.close();
  });
});
