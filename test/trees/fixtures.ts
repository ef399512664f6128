/**
 * Hand-built Interface Call Records for the tree tests. Token ids come from the real byte tokenizer over ChatML text,
 * so masks and spans are exercised on real token sequences. Fixtures captured from real harness runs through the proxy
 * are a later addition (they need the proxy + built-in harnesses end to end).
 */
import { parseCompletion } from "../../src/proxy/output/spans.js";
import type { BreakKind, CallRecord } from "../../src/icr/records.js";
import { ICR_SCHEMA_VERSION } from "../../src/icr/records.js";
import { ByteTokenizer } from "../../src/tokenizer/bytes.js";
import { mulberry32 } from "../../src/core/random.js";

export const tok = new ByteTokenizer();

export function enc(text: string): number[] {
  return tok.encode(text);
}

export interface CallSpec {
  callId: string;
  sessionId?: string;
  rolloutId?: string | null;
  prompt: number[];
  completion: string;
  parentCallId?: string | null;
  break?: { kind: BreakKind; fromCallId: string | null } | null;
  agentRole?: string | null;
  spawnedByCallId?: string | null;
  finishReason?: "stop" | "length" | "abort";
  status?: "ok" | "error";
  policyVersion?: number;
}

let clock = 1_000;

/** A deterministic, non-constant logprob per completion position (so mix-ups between tokens show). */
export function fakeLogprob(callId: string, i: number): number {
  let h = 0;
  for (const ch of callId) h = (h * 31 + ch.charCodeAt(0)) % 997;
  return -((h + i * 13) % 50) / 17 - 0.01;
}

export function call(spec: CallSpec): CallRecord {
  const completionTokens = enc(spec.completion);
  // The proxy's own parse: the spans it would have recorded for this completion.
  const { output: parsed, spans } = parseCompletion(tok, "<|im_end|>", completionTokens);
  const t = clock++;
  return {
    schemaVersion: ICR_SCHEMA_VERSION,
    callId: spec.callId,
    sessionId: spec.sessionId ?? "ses_main",
    rolloutId: spec.rolloutId === undefined ? "rol_1" : spec.rolloutId,
    harness: "fixture",
    agentRole: spec.agentRole ?? null,
    agentId: null,
    protocol: "openai-chat",
    stream: false,
    status: spec.status ?? "ok",
    error: null,
    rawRequest: null,
    rawResponse: null,
    messages: [],
    tools: [],
    response: {
      role: "assistant",
      content: parsed.content,
      toolCalls: parsed.toolCalls.map((c, i) => ({ id: `tc_${spec.callId}_${i}`, name: c.name, arguments: c.argumentsText })),
    },
    promptTokens: spec.prompt,
    completionTokens,
    logprobs: completionTokens.map((_, i) => fakeLogprob(spec.callId, i)),
    spans,
    policyVersion: spec.policyVersion ?? 3,
    samplingRequested: {},
    samplingUsed: null,
    finishReason: spec.finishReason ?? "stop",
    timings: { receivedAt: t, engineStartAt: t, firstTokenAt: t, engineEndAt: t, recordedAt: t },
    parentCallId: spec.parentCallId ?? null,
    reusedPrefixTokens: 0,
    break: spec.break ? { kind: spec.break.kind, detail: "fixture", fromCallId: spec.break.fromCallId } : null,
    spawnedByCallId: spec.spawnedByCallId ?? null,
  };
}

export const SYSTEM = "<|im_start|>system\nYou are a coding agent. Tools: bash, read.<|im_end|>\n";
export const GEN = "<|im_start|>assistant\n";

export function userTurn(text: string): string {
  return `<|im_start|>user\n${text}<|im_end|>\n`;
}

export function toolTurn(...outputs: string[]): string {
  return outputs.map((o) => `<|im_start|>user\n<tool_response>\n${o}\n</tool_response><|im_end|>\n`).join("");
}

export function toolCall(name: string, args: Record<string, unknown>): string {
  return `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
}

/** The prompt of a child call: the parent's prompt + completion, then `inserted` text, then the generation prompt. */
export function extend(parent: CallRecord, inserted: string): number[] {
  return [...parent.promptTokens, ...parent.completionTokens, ...enc("\n" + inserted + GEN)];
}

export function first(task: string): number[] {
  return enc(SYSTEM + userTurn(task) + GEN);
}

/** Five-turn linear session: bash, read, bash, read, final answer. */
export function linearSession(sessionId = "ses_main", rolloutId: string | null = "rol_1", prefix = "c"): CallRecord[] {
  const out: CallRecord[] = [];
  let prompt = first("Fix the failing test in src/math.ts");
  const steps = [toolCall("bash", { cmd: "npm test" }), toolCall("read", { path: "src/math.ts" }), toolCall("bash", { cmd: "sed -i s/-/+/ src/math.ts" }), toolCall("bash", { cmd: "npm test" }), "The test passes now."];
  steps.forEach((s, i) => {
    const c = call({ callId: `${prefix}${i + 1}`, sessionId, rolloutId, prompt, completion: s + "<|im_end|>", parentCallId: out[i - 1]?.callId ?? null });
    out.push(c);
    prompt = extend(c, toolTurn(`output of step ${i + 1}`));
  });
  return out;
}

/** One assistant turn with two parallel tool calls; the next prompt carries both results. */
export function parallelSession(): CallRecord[] {
  const c1 = call({ callId: "p1", prompt: first("List both dirs"), completion: toolCall("bash", { cmd: "ls a" }) + "\n" + toolCall("bash", { cmd: "ls b" }) + "<|im_end|>" });
  const c2 = call({ callId: "p2", prompt: extend(c1, toolTurn("a.txt", "b.txt")), completion: "Both listed.<|im_end|>", parentCallId: "p1" });
  return [c1, c2];
}

/** Main session whose second call spawns a sub-agent session (two calls) via a `task` tool call. */
export function subAgentRollout(): CallRecord[] {
  const m1 = call({ callId: "m1", prompt: first("Research and summarise"), completion: toolCall("task", { prompt: "find the docs" }) + "<|im_end|>" });
  const s1 = call({ callId: "s1", sessionId: "ses_sub", agentRole: "subagent", spawnedByCallId: "m1", prompt: enc("<|im_start|>system\nYou are a research sub-agent.<|im_end|>\n" + userTurn("find the docs") + GEN), completion: toolCall("read", { path: "README.md" }) + "<|im_end|>", break: { kind: "new_root", fromCallId: null } });
  const s2 = call({ callId: "s2", sessionId: "ses_sub", agentRole: "subagent", spawnedByCallId: "m1", prompt: extend(s1, toolTurn("# Docs")), completion: "The docs are in README.md.<|im_end|>", parentCallId: "s1" });
  const m2 = call({ callId: "m2", prompt: extend(m1, toolTurn("The docs are in README.md.")), completion: "Summary: see README.md.<|im_end|>", parentCallId: "m1" });
  return [m1, s1, s2, m2];
}

/**
 * Qwen Code's shape: the task conversation (two calls, then a third whose history the template re-rendered), then in
 * the same session a memory agent with its own system prompt (a new root) whose second call re-renders its own first
 * turn (a template break from the memory agent's call, not from the task's).
 */
export function sideConversationSession(): CallRecord[] {
  const q1 = call({ callId: "q1", prompt: first("Compute 2+3 into answer.txt"), completion: toolCall("bash", { cmd: "echo 5 > answer.txt" }) + "<|im_end|>" });
  const q2 = call({ callId: "q2", prompt: extend(q1, toolTurn("")), completion: "Written.<|im_end|>", parentCallId: "q1" });
  const q3 = call({ callId: "q3", prompt: enc(SYSTEM + userTurn("Compute 2+3 into answer.txt") + "<|im_start|>assistant\nWritten.<|im_end|>\n" + userTurn("Check it") + GEN), completion: toolCall("bash", { cmd: "cat answer.txt" }) + "<|im_end|>", parentCallId: "q2", break: { kind: "template_not_prefix_stable", fromCallId: "q2" } });
  const memory = "<|im_start|>system\nYou are now acting as the managed memory extraction subagent.<|im_end|>\n";
  const a1 = call({ callId: "a1", prompt: enc(memory + userTurn("Extract memories from the conversation") + GEN), completion: "<think>\nnothing new\n</think>\n" + toolCall("write", { path: "mem.md" }) + "<|im_end|>", break: { kind: "new_root", fromCallId: null } });
  const a2 = call({ callId: "a2", prompt: enc(memory + userTurn("Extract memories from the conversation") + "<|im_start|>assistant\n" + toolCall("write", { path: "mem.md" }) + "<|im_end|>\n" + toolTurn("ok") + GEN), completion: "Done.<|im_end|>", parentCallId: "a1", break: { kind: "template_not_prefix_stable", fromCallId: "a1" } });
  return [q1, q2, q3, a1, a2];
}

/** Three turns, then the harness compacts history into a summary and continues for two more turns. */
export function compactionSession(): CallRecord[] {
  const base = linearSession("ses_main", "rol_1", "k").slice(0, 3);
  const last = base[2] as CallRecord;
  const k4 = call({ callId: "k4", prompt: enc(SYSTEM + userTurn("Summary of earlier work: ran tests, read math.ts, patched it.") + GEN), completion: toolCall("bash", { cmd: "npm test" }) + "<|im_end|>", parentCallId: "k3", break: { kind: "compaction", fromCallId: last.callId } });
  const k5 = call({ callId: "k5", prompt: extend(k4, toolTurn("all tests pass")), completion: "Done.<|im_end|>", parentCallId: "k4" });
  return [...base, k4, k5];
}

/** Call r2 is regenerated after a malformed tool call (same prompt): the regeneration r2b continues, r2 is a dead leaf. */
export function retrySession(): CallRecord[] {
  const r1 = call({ callId: "r1", prompt: first("Count files"), completion: toolCall("bash", { cmd: "ls" }) + "<|im_end|>" });
  const p2 = extend(r1, toolTurn("x y z"));
  const r2 = call({ callId: "r2", prompt: p2, completion: '<tool_call>\n{"name": "bash", "arguments": {"cmd": "wc -l"</tool_call><|im_end|>', parentCallId: "r1" });
  const r2b = call({ callId: "r2b", prompt: p2, completion: toolCall("bash", { cmd: "ls | wc -l" }) + "<|im_end|>", parentCallId: "r1" });
  const r3 = call({ callId: "r3", prompt: extend(r2b, toolTurn("3")), completion: "There are 3 files.<|im_end|>", parentCallId: "r2b" });
  return [r1, r2, r2b, r3];
}

/** The harness edits an earlier user turn: the new prompt shares only the system prompt + part of the first user turn. */
export function editedHistorySession(): CallRecord[] {
  const e1 = call({ callId: "e1", prompt: first("Rename foo to bar"), completion: toolCall("bash", { cmd: "grep -r foo" }) + "<|im_end|>" });
  const e2 = call({ callId: "e2", prompt: extend(e1, toolTurn("a.ts: foo()")), completion: toolCall("bash", { cmd: "sed -i s/foo/bar/ a.ts" }) + "<|im_end|>", parentCallId: "e1" });
  const edited = enc(SYSTEM + userTurn("Rename foo to baz") + GEN);
  const e3 = call({ callId: "e3", prompt: edited, completion: toolCall("bash", { cmd: "sed -i s/foo/baz/ a.ts" }) + "<|im_end|>", parentCallId: "e2", break: { kind: "edited_history", fromCallId: "e2" } });
  return [e1, e2, e3];
}

/** The first turn has reasoning; the harness sends it back without the reasoning, so the template renders it differently. */
export function strippedReasoningSession(): CallRecord[] {
  const think = "<think>\nI should look at the files first.\n</think>\n";
  const action = toolCall("bash", { cmd: "ls" });
  const t1 = call({ callId: "t1", prompt: first("What is here?"), completion: think + action + "<|im_end|>" });
  const history = SYSTEM + userTurn("What is here?") + GEN + action + "<|im_end|>\n";
  const t2 = call({ callId: "t2", prompt: enc(history + toolTurn("a b") + GEN), completion: "Two files: a and b.<|im_end|>", parentCallId: "t1", break: { kind: "stripped_reasoning", fromCallId: "t1" } });
  return [t1, t2];
}

/** A small deterministic PRNG for generated data (the shared mulberry32). */
export const rng = mulberry32;

/**
 * A random session: each new call extends a random earlier call, retries one, or starts a rewritten history that
 * shares a random prefix of an earlier prompt. Completions are random short texts (sometimes with tool calls and
 * multi-byte characters).
 */
export function randomSession(seed: number, calls: number, sessionId = "ses_rand", rolloutId = "rol_rand"): CallRecord[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const words = ["ls", "cat", "日本", "é", "🙂", "x", "grep foo", "ok"];
  const completion = (): string => (r() < 0.5 ? toolCall(pick(["bash", "read"]), { cmd: pick(words) + " " + pick(words) }) : `answer ${pick(words)}`) + "<|im_end|>";
  const out: CallRecord[] = [];
  for (let i = 0; i < calls; i++) {
    const id = `x${seed}_${i}`;
    const base = { callId: id, sessionId, rolloutId, completion: completion() };
    if (out.length === 0 || r() < 0.08) {
      out.push(call({ ...base, prompt: first(`task ${pick(words)}`) }));
      continue;
    }
    const p = pick(out);
    const u = r();
    if (u < 0.6) out.push(call({ ...base, prompt: extend(p, toolTurn(pick(words))), parentCallId: p.callId }));
    else if (u < 0.8) out.push(call({ ...base, prompt: p.promptTokens, parentCallId: p.parentCallId }));
    else {
      const cut = Math.floor(r() * p.promptTokens.length);
      out.push(call({ ...base, prompt: [...p.promptTokens.slice(0, cut), ...enc(userTurn("rewritten " + pick(words)) + GEN)], parentCallId: p.callId, break: { kind: pick(["compaction", "edited_history", "stripped_reasoning"] as const), fromCallId: p.callId } }));
    }
  }
  return out;
}
