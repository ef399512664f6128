/**
 * Small hand-built records for the advantage tests: explicit token ids (so expected values can be computed by hand),
 * or real ChatML text through the byte tokenizer where tool calls and masks matter.
 */
import { parseCompletion } from "../../src/proxy/output/spans.js";
import type { RolloutResult, RolloutStatus } from "../../src/tasks/rollout-result.js";
import type { CallRecord } from "../../src/icr/records.js";
import { ICR_SCHEMA_VERSION } from "../../src/icr/records.js";
import { ByteTokenizer } from "../../src/tokenizer/bytes.js";

export const tok = new ByteTokenizer();

let clock = 10_000;

export interface RecSpec {
  callId: string;
  rolloutId: string;
  prompt: number[];
  completion: number[] | string;
  sessionId?: string;
  /** Tool calls the proxy parsed from the completion (defaults to parsing a string completion). */
  toolCalls?: string[];
}

export function rec(spec: RecSpec): CallRecord {
  const text = typeof spec.completion === "string" ? spec.completion : null;
  const completionTokens = text === null ? (spec.completion as number[]) : tok.encode(text);
  // A text completion gets the spans the proxy would record; explicit ids have none to find.
  const parsed = text === null ? null : parseCompletion(tok, "<|im_end|>", completionTokens);
  const names = spec.toolCalls ?? parsed?.output.toolCalls.map((c) => c.name) ?? [];
  const t = clock++;
  return {
    schemaVersion: ICR_SCHEMA_VERSION,
    callId: spec.callId,
    sessionId: spec.sessionId ?? `ses_${spec.rolloutId}`,
    rolloutId: spec.rolloutId,
    harness: "fixture",
    agentRole: null,
    agentId: null,
    protocol: "openai-chat",
    stream: false,
    status: "ok",
    error: null,
    rawRequest: null,
    rawResponse: null,
    messages: [],
    tools: [],
    response: { role: "assistant", content: "", toolCalls: names.map((name, i) => ({ id: `tc_${spec.callId}_${i}`, name, arguments: "{}" })) },
    promptTokens: spec.prompt,
    completionTokens,
    logprobs: completionTokens.map((_, i) => -0.1 - i / 100),
    spans: parsed?.spans ?? { toolCalls: [], malformed: 0 },
    policyVersion: 1,
    samplingRequested: {},
    samplingUsed: null,
    finishReason: "stop",
    timings: { receivedAt: t, engineStartAt: t, firstTokenAt: t, engineEndAt: t, recordedAt: t },
    parentCallId: null,
    reusedPrefixTokens: 0,
    break: null,
    spawnedByCallId: null,
  };
}

/** One linear rollout: call a (prompt P, completion A), call b (prompt P+A+tool, completion B). */
export function linear(rolloutId: string, base: number, b: number[]): CallRecord[] {
  const p = [1, 2, 3];
  const a = [base, base + 1];
  return [rec({ callId: `${rolloutId}_a`, rolloutId, prompt: p, completion: a }), rec({ callId: `${rolloutId}_b`, rolloutId, prompt: [...p, ...a, 20, 21], completion: b })];
}

/**
 * Two branches after a shared first call: a (2 tokens, shared), b1 (2 tokens) and b2 (1 token) after different tool
 * outputs. Paths: a+b1 (4 trainable tokens), a+b2 (3).
 */
export function branching(rolloutId: string, base: number): CallRecord[] {
  const p = [1, 2, 3];
  const a = [base, base + 1];
  return [
    rec({ callId: `${rolloutId}_a`, rolloutId, prompt: p, completion: a }),
    rec({ callId: `${rolloutId}_b1`, rolloutId, prompt: [...p, ...a, 20], completion: [base + 2, base + 3] }),
    rec({ callId: `${rolloutId}_b2`, rolloutId, prompt: [...p, ...a, 30], completion: [base + 5] }),
  ];
}

export function result(rolloutId: string, taskId: string, harness: string, score: number, status: RolloutStatus = "ok", subscores: Record<string, number | number[]> = {}): RolloutResult {
  return {
    rolloutId,
    taskId,
    harness,
    sample: 0,
    family: "fixture",
    split: "train",
    status,
    score,
    verifier: { score, subscores },
    harnessDetail: "",
    exitCode: 0,
    signal: null,
    stdout: "",
    stderr: "",
    error: status === "infra_error" ? "sandbox died" : null,
    sessionIds: [],
    calls: 0,
    timings: { startedAt: 0, sandboxReadyAt: null, harnessEndedAt: null, settledAt: null, verifiedAt: null, endedAt: 0 },
  };
}
