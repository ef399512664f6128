import { performance } from "node:perf_hooks";
import type { ChatRenderer } from "../chat/renderer.js";
import type { ChatMessage, ToolSpec } from "../chat/types.js";
import { InfraError } from "../core/errors.js";
import { MemoryStore } from "../store/memory.js";
import { ICR_SCHEMA_VERSION, type CallRecord } from "../icr/records.js";
import type { Tokenizer } from "../tokenizer/types.js";
import { createHistoryPlanner } from "../history/planner.js";

export interface PlannerBenchRow {
  call: number;
  promptTokens: number;
  /** plan(): one render + prefix checks + encoding of the new suffix. */
  planUs: number;
  /** remember(): indexing + rendering the call with its response once. */
  rememberUs: number;
  /** For scale: rendering the whole request once, and tokenizing it whole. */
  renderUs: number;
  encodeAllUs: number;
}

/**
 * One long agent session (Claude-Code-sized system prompt and tool list, a tool call per turn) planned through the
 * real planner; reports per-call costs at checkpoints so growth with session length is visible.
 */
export function runPlannerBench(codec: { tokenizer: Tokenizer; renderer: ChatRenderer }, calls = 200, checkpoints = [1, 10, 50, 100, 150, 200], repeats = 15): PlannerBenchRow[] {
  const store = new MemoryStore();
  const planner = createHistoryPlanner(store);
  const tools: ToolSpec[] = Array.from({ length: 12 }, (_, i) => ({
    name: `tool_${i}`,
    description: `Tool number ${i}. `.repeat(40),
    parameters: { type: "object", properties: { path: { type: "string", description: "a path ".repeat(20) }, n: { type: "number" } } },
  }));
  let messages: ChatMessage[] = [
    { role: "system", content: "You are a coding agent. ".repeat(300) },
    { role: "user", content: "Fix the failing tests in the repository." },
  ];
  const rows: PlannerBenchRow[] = [];
  const rememberTimes: number[] = [];
  const sessionId = "ses_bench";
  for (let i = 1; i <= calls; i++) {
    const t0 = performance.now();
    const plan = planner.plan(sessionId, { messages, tools }, codec);
    const t1 = performance.now();
    const response: ChatMessage = { role: "assistant", content: `Step ${i}.`, toolCalls: [{ id: `call_${i}`, name: `tool_${i % 12}`, arguments: JSON.stringify({ path: `src/file_${i}.ts`, n: i }) }] };
    const before = codec.renderer.render(messages, tools, { addGenerationPrompt: true });
    const after = codec.renderer.render([...messages, response], tools, { addGenerationPrompt: false });
    const completionTokens = codec.tokenizer.encode(after.slice(before.length, after.lastIndexOf(codec.renderer.endOfTurn) + codec.renderer.endOfTurn.length));
    const record: CallRecord = {
      schemaVersion: ICR_SCHEMA_VERSION, callId: `call_bench_${i}`, sessionId, rolloutId: null, harness: null, agentRole: null, agentId: null,
      protocol: "openai-chat", stream: false, status: "ok", error: null, rawRequest: null, rawResponse: null, messages, tools, response,
      promptTokens: plan.promptTokens, completionTokens, logprobs: completionTokens.map(() => -1), spans: { toolCalls: [], malformed: 0 }, policyVersion: 0, samplingRequested: {},
      samplingUsed: null, finishReason: "stop", timings: { receivedAt: 0, engineStartAt: null, firstTokenAt: null, engineEndAt: null, recordedAt: 0 },
      parentCallId: plan.parentCallId, reusedPrefixTokens: plan.reusedPrefixTokens, break: plan.break, spawnedByCallId: null,
    };
    store.insertCall(record);
    const t2 = performance.now();
    planner.remember(record);
    const t3 = performance.now();
    if (i > 1 && plan.parentCallId !== `call_bench_${i - 1}`) throw new InfraError("bench_check_failed", `call ${i} was not spliced: ${JSON.stringify(plan.break)}`);
    rememberTimes.push(t3 - t2);
    if (checkpoints.includes(i)) {
      // plan() does not change the planner's state, so it can be repeated on the same request; medians resist the
      // noise of a shared machine.
      const planT = [t1 - t0];
      const renderT: number[] = [];
      const encodeT: number[] = [];
      for (let rep = 0; rep < repeats; rep++) {
        const p0 = performance.now();
        planner.plan(sessionId, { messages, tools }, codec);
        const p1 = performance.now();
        const text = codec.renderer.render(messages, tools, { addGenerationPrompt: true });
        const p2 = performance.now();
        codec.tokenizer.encode(text);
        const p3 = performance.now();
        planT.push(p1 - p0);
        renderT.push(p2 - p1);
        encodeT.push(p3 - p2);
      }
      rows.push({
        call: i, promptTokens: plan.promptTokens.length, planUs: medianUs(planT), rememberUs: medianUs(rememberTimes.slice(-10)),
        renderUs: medianUs(renderT), encodeAllUs: medianUs(encodeT),
      });
    }
    messages = [...messages, response, { role: "tool", content: `result of step ${i}\n`.repeat(20), toolCallId: `call_${i}` }];
  }
  return rows;
}

function medianUs(ms: readonly number[]): number {
  const s = [...ms].sort((a, b) => a - b);
  return Math.round((s[Math.floor(s.length / 2)] ?? 0) * 1000);
}
