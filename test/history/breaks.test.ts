import { describe, expect, it } from "vitest";
import { defaultCodec, type Codec } from "../../src/chat/codec.js";
import { JinjaChatRenderer } from "../../src/chat/jinja-renderer.js";
import type { ChatMessage, ToolSpec } from "../../src/chat/types.js";
import { createHistoryPlanner } from "../../src/history/planner.js";
import type { PromptPlan } from "../../src/history/types.js";
import { MemoryStore } from "../../src/store/memory.js";
import { SessionSim, echo, toolResults } from "./session-sim.js";

const base = defaultCodec();
const TOOLS: ToolSpec[] = [{ name: "run", description: "Run a command", parameters: { type: "object", properties: { cmd: { type: "string" }, cwd: { type: "string" } } } }];
const SYSTEM: ChatMessage = { role: "system", content: "You are an agent." };

/** Qwen3's behaviour: reasoning of assistant turns before the last user message is not rendered. */
const QWEN3_LIKE = `
{%- set ns = namespace(last_user=-1) -%}
{%- for m in messages -%}{%- if m.role == "user" -%}{%- set ns.last_user = loop.index0 -%}{%- endif -%}{%- endfor -%}
{%- for m in messages -%}
{%- if m.role == "assistant" -%}
{{- "<|im_start|>assistant\\n" -}}
{%- if m.reasoning_content and loop.index0 > ns.last_user -%}{{- "<think>\\n" + m.reasoning_content + "\\n</think>\\n\\n" -}}{%- endif -%}
{{- m.content -}}
{%- for tc in m.tool_calls or [] -%}{{- "<tool_call>\\n{\\"name\\": " + (tc.function.name | tojson) + ", \\"arguments\\": " + (tc.function.arguments | tojson) + "}\\n</tool_call>" -}}{%- endfor -%}
{{- "<|im_end|>\\n" -}}
{%- elif m.role == "tool" -%}{{- "<|im_start|>user\\n<tool_response>\\n" + m.content + "\\n</tool_response><|im_end|>\\n" -}}
{%- else -%}{{- "<|im_start|>" + m.role + "\\n" + m.content + "<|im_end|>\\n" -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- "<|im_start|>assistant\\n" -}}{%- endif -%}`;

/** A template that prints tool-call ids (as some models' templates do). */
const IDS_RENDERED = `
{%- for m in messages -%}
{%- if m.role == "assistant" -%}
{{- "<|im_start|>assistant\\n" + m.content -}}
{%- for tc in m.tool_calls or [] -%}{{- "<tool_call>\\n{\\"id\\": " + (tc.id | tojson) + ", \\"name\\": " + (tc.function.name | tojson) + ", \\"arguments\\": " + (tc.function.arguments | tojson) + "}\\n</tool_call>" -}}{%- endfor -%}
{{- "<|im_end|>\\n" -}}
{%- elif m.role == "tool" -%}{{- "<|im_start|>tool\\n" + (m.tool_call_id or "") + ": " + m.content + "<|im_end|>\\n" -}}
{%- else -%}{{- "<|im_start|>" + m.role + "\\n" + m.content + "<|im_end|>\\n" -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- "<|im_start|>assistant\\n" -}}{%- endif -%}`;

function codecWith(template: string): Codec {
  return { tokenizer: base.tokenizer, renderer: new JinjaChatRenderer(template, { eosToken: "<|endoftext|>", endOfTurn: "<|im_end|>" }) };
}

function newSim(codec: Codec = base): SessionSim {
  const store = new MemoryStore();
  return new SessionSim(createHistoryPlanner(store), store, codec);
}

/** Plans `messages` and checks the prompt was rendered whole from what the harness sent. */
function expectBreak(sim: SessionSim, messages: ChatMessage[], kind: string, fromCallId: string | null, tools: ToolSpec[] = TOOLS): PromptPlan {
  const plan = sim.planner.plan(sim.sessionId, { messages, tools }, sim.codec);
  expect(plan.break?.kind, plan.break?.detail).toBe(kind);
  expect(plan.break?.fromCallId).toBe(fromCallId);
  expect(plan.break?.detail.length).toBeGreaterThan(10);
  expect(plan.parentCallId).toBeNull();
  expect(plan.reusedPrefixTokens).toBe(0);
  expect(plan.promptTokens).toEqual(sim.codec.tokenizer.encode(sim.codec.renderer.render(messages, tools, { addGenerationPrompt: true })));
  return plan;
}

/** system, user → tool call → tool result → answer; returns the records and the conversation so far. */
function toolLoop(sim: SessionSim, opts: { reasoning?: string } = {}) {
  const m1: ChatMessage[] = [SYSTEM, { role: "user", content: "List files." }];
  const c1 = sim.call(echo(m1), TOOLS, { ...opts, toolCalls: [{ name: "run", arguments: { cmd: "ls", cwd: "/w" } }] }).record;
  const a1 = echo(c1.response!);
  const m2 = [...m1, a1, ...toolResults(a1, () => "a.txt\nb.txt")];
  const c2 = sim.call(echo(m2), TOOLS, { ...opts, content: "There are two files." }).record;
  const a2 = echo(c2.response!);
  return { m1, c1, a1, m2, c2, a2, history: [...m2, a2] };
}

describe("history breaks", () => {
  it("a session's first call is a root without a break", () => {
    const sim = newSim();
    const plan = sim.planner.plan(sim.sessionId, { messages: [SYSTEM, { role: "user", content: "hi" }], tools: TOOLS }, base);
    expect(plan).toMatchObject({ parentCallId: null, reusedPrefixTokens: 0, break: null });
  });

  it("a first call that already holds assistant turns is flagged unknown_assistant_turn", () => {
    const sim = newSim();
    expectBreak(sim, [SYSTEM, { role: "user", content: "hi" }, { role: "assistant", content: "made up" }, { role: "user", content: "go" }], "unknown_assistant_turn", null);
  });

  it("stripped_reasoning: the harness sends a sampled turn back without its reasoning", () => {
    const sim = newSim();
    const { c1, a1, history } = toolLoop(sim, { reasoning: "I should list." });
    const stripped = history.map((m) => (m.role === "assistant" ? { ...m, reasoning: undefined } : m));
    expect(stripped[2]).not.toEqual(a1);
    expectBreak(sim, [...stripped, { role: "user", content: "thanks" }], "stripped_reasoning", c1.callId);
  });

  it("re-serialised tool arguments are realigned: the prompt keeps the sampled tokens and records the turn, no break", () => {
    const sim = newSim();
    const { c1, a1, c2, history } = toolLoop(sim);
    const rewritten = { ...a1, toolCalls: a1.toolCalls!.map((c) => ({ ...c, arguments: '{ "cwd": "/w", "cmd": "ls" }' })) };
    const plan = sim.planner.plan(sim.sessionId, { messages: [...history.slice(0, 2), rewritten, ...history.slice(3), { role: "user", content: "ok" }], tools: TOOLS }, base);
    expect(plan.break).toBeNull();
    expect(plan.parentCallId).toBe(c2.callId);
    expect(plan.realigned).toEqual([{ messageIndex: 2, kind: "reserialized_tool_args", fromCallId: c1.callId }]);
    expect(plan.promptTokens.slice(0, plan.reusedPrefixTokens)).toEqual([...c2.promptTokens, ...c2.completionTokens]);
  });

  it("a JavaScript harness re-stringifies every sampled turn: each call still extends its parent token for token", () => {
    for (const restart of [false, true]) {
      const store = new MemoryStore();
      let sim = new SessionSim(createHistoryPlanner(store), store, base);
      // The harness keeps the parsed arguments and serialises them its own way on every later request.
      const reformat = (text: string): string => JSON.stringify(JSON.parse(text), null, 1);
      const restringify = (m: ChatMessage): ChatMessage => (m.role === "assistant" && m.toolCalls ? { ...m, toolCalls: m.toolCalls.map((c) => ({ ...c, arguments: reformat(c.arguments) })) } : m);
      let messages: ChatMessage[] = [SYSTEM, { role: "user", content: "Find the bug." }];
      let previous: { promptTokens: number[]; completionTokens: number[]; callId: string } | null = null;
      for (let turn = 0; turn < 4; turn++) {
        const { record, plan } = sim.call(messages.map(restringify), TOOLS, { toolCalls: [{ name: "run", arguments: { cmd: `grep -n bug f${turn}.ts`, cwd: "/w" } }] });
        if (previous) {
          expect(plan.break, plan.break?.detail).toBeNull();
          expect(plan.parentCallId).toBe(previous.callId);
          expect(plan.promptTokens.slice(0, plan.reusedPrefixTokens)).toEqual([...previous.promptTokens, ...previous.completionTokens]);
          expect(plan.realigned.map((r) => r.messageIndex)).toEqual(messages.flatMap((m, i) => (m.role === "assistant" ? [i] : [])));
        }
        // What the harness sends back really differs from the text it was given.
        const given = record.response!.toolCalls![0]!.arguments;
        expect(reformat(given)).not.toBe(given);
        previous = record;
        const a = echo(record.response!);
        messages = [...messages, a, ...toolResults(a, () => `f${turn}.ts:3: bug`)];
        // A proxy restarted mid-session reloads the produced calls from the store and stays token-exact.
        if (restart) sim = new SessionSim(createHistoryPlanner(store), store, base, sim.sessionId);
      }
    }
  });

  it("arguments changed to a different value are edited_history", () => {
    const sim = newSim();
    const { c1, a1, history } = toolLoop(sim);
    const rewritten = { ...a1, toolCalls: a1.toolCalls!.map((c) => ({ ...c, arguments: '{"cmd": "rm -rf /"}' })) };
    expectBreak(sim, [...history.slice(0, 2), rewritten, ...history.slice(3)], "edited_history", c1.callId);
  });

  it("rewritten tool-call ids: spliced when the template ignores ids, rewritten_tool_call_ids when it renders them", () => {
    for (const [codec, broken] of [[base, false], [codecWith(IDS_RENDERED), true]] as const) {
      const sim = newSim(codec);
      const { c2, history } = toolLoop(sim);
      // OpenClaw-style rewrite: call_x_1 → callx1, in the call and in its result.
      const renamed = history.map((m) => ({
        ...m,
        ...(m.toolCalls ? { toolCalls: m.toolCalls.map((c) => ({ ...c, id: c.id.replace(/_/g, "") })) } : {}),
        ...(m.toolCallId ? { toolCallId: m.toolCallId.replace(/_/g, "") } : {}),
      }));
      const next = [...renamed, { role: "user" as const, content: "next" }];
      if (broken) {
        expectBreak(sim, next, "rewritten_tool_call_ids", c2.callId);
      } else {
        const plan = sim.planner.plan(sim.sessionId, { messages: next, tools: TOOLS }, codec);
        expect(plan.break).toBeNull();
        expect(plan.parentCallId).toBe(c2.callId);
        expect(plan.promptTokens.slice(0, plan.reusedPrefixTokens)).toEqual([...c2.promptTokens, ...c2.completionTokens]);
      }
    }
  });

  it("dropped_turns: the harness removes turns from the middle of the history", () => {
    const sim = newSim();
    const { c2, history } = toolLoop(sim);
    // Drop the tool call and its result, keep the final answer.
    expectBreak(sim, [history[0]!, history[1]!, history[4]!, { role: "user", content: "and?" }], "dropped_turns", c2.callId);
  });

  it("dropped_turns: the context message appended after each tool result is gone and the sampled turn follows without its reasoning (OpenClaw, chat mode)", () => {
    const sim = newSim();
    const context: ChatMessage = { role: "user", content: "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nActive exec sessions: none\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>" };
    const query: ChatMessage = { role: "user", content: "List the files." };
    const c1 = sim.call([SYSTEM, query, context], TOOLS, { reasoning: "Listing first.", toolCalls: [{ name: "run", arguments: { cmd: "ls" } }] }).record;
    const { reasoning: _dropped, ...a1 } = echo(c1.response!);
    const plan = expectBreak(sim, [SYSTEM, query, a1, ...toolResults(a1, () => "a.txt"), context], "dropped_turns", c1.callId);
    expect(plan.break?.detail).toMatch(/message 2 \(assistant\) is message 3 of call .*reasoning was removed.*messages 2\.\.2 were dropped/);
  });

  it("compaction: earlier turns replaced by a summary, the history shrinks", () => {
    const sim = newSim();
    const { history } = toolLoop(sim);
    const m3 = [...history, { role: "user" as const, content: "Now run the tests." }];
    const c3 = sim.call(echo(m3), TOOLS, { toolCalls: [{ name: "run", arguments: { cmd: "npm test" } }] }).record;
    const a3 = echo(c3.response!);
    const compacted: ChatMessage[] = [SYSTEM, { role: "user", content: "Summary: listed files (a.txt, b.txt); now running tests." }, a3, ...toolResults(a3, () => "1 passed")];
    expectBreak(sim, compacted, "compaction", c3.callId);
  });

  it("unknown_assistant_turn: an assistant turn the proxy never sampled", () => {
    const sim = newSim();
    const { c1, history } = toolLoop(sim);
    const fake: ChatMessage = { role: "assistant", content: "I will now do something else entirely." };
    expectBreak(sim, [history[0]!, history[1]!, fake, { role: "user", content: "ok" }], "unknown_assistant_turn", c1.callId);
  });

  it("edited_history: an earlier user message changed", () => {
    const sim = newSim();
    const { c2, history } = toolLoop(sim);
    const edited = history.map((m, i) => (i === 1 ? { ...m, content: "List all files, including hidden ones." } : m));
    expectBreak(sim, [...edited, { role: "user", content: "more" }], "edited_history", c2.callId);
  });

  it("edited_history: the tool definitions changed under an extended history", () => {
    const sim = newSim();
    const { c2, history } = toolLoop(sim);
    const tools = [...TOOLS, { name: "read", parameters: { type: "object" } }];
    expectBreak(sim, [...history, { role: "user", content: "more" }], "edited_history", c2.callId, tools);
  });

  it("new_root: a side call with another system prompt, or a fresh conversation without assistant turns", () => {
    const sim = newSim();
    const { c2 } = toolLoop(sim);
    expectBreak(sim, [{ role: "system", content: "Generate a title." }, { role: "user", content: "List files." }], "new_root", null, []);
    expectBreak(sim, [SYSTEM, { role: "user", content: "A sub-agent task." }], "new_root", c2.callId);
  });

  it("template_not_prefix_stable: a Qwen3-style template strips earlier reasoning once a new user message follows", () => {
    const sim = newSim(codecWith(QWEN3_LIKE));
    // Within one user query the template keeps reasoning, so the tool loop is spliced.
    const { c1, c2, history } = toolLoop(sim, { reasoning: "Let me look." });
    expect(c2.parentCallId).toBe(c1.callId);
    expect(c2.break).toBeNull();
    expect(c2.promptTokens.slice(0, c2.reusedPrefixTokens)).toEqual([...c1.promptTokens, ...c1.completionTokens]);
    expectBreak(sim, [...history, { role: "user", content: "Next question." }], "template_not_prefix_stable", c2.callId);
  });

  it("a rewritten turn after an intact parent is recorded while the prompt still extends that parent", () => {
    const sim = newSim();
    const m1: ChatMessage[] = [SYSTEM, { role: "user", content: "hi" }];
    const c1 = sim.call(echo(m1), TOOLS, { content: "hello" }).record;
    const m2 = [...m1, echo(c1.response!), { role: "user" as const, content: "run ls" }];
    const c2 = sim.call(echo(m2), TOOLS, { toolCalls: [{ name: "run", arguments: { cmd: "ls", cwd: "." } }] }).record;
    const a2 = echo(c2.response!);
    const edited = { ...a2, toolCalls: a2.toolCalls!.map((c) => ({ ...c, arguments: JSON.stringify({ cmd: "ls -la", cwd: "." }) })) };
    const plan = sim.planner.plan(sim.sessionId, { messages: [...m2, edited, ...toolResults(a2, () => "x")], tools: TOOLS }, base);
    expect(plan.break?.kind).toBe("edited_history");
    expect(plan.break?.fromCallId).toBe(c2.callId);
    expect(plan.parentCallId).toBe(c1.callId);
    expect(plan.realigned).toEqual([]);
    expect(plan.promptTokens.slice(0, plan.reusedPrefixTokens)).toEqual([...c1.promptTokens, ...c1.completionTokens]);
  });

});
