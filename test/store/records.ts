import type { ChatMessage } from "../../src/chat/types.js";
import { newId } from "../../src/core/ids.js";
import { ICR_SCHEMA_VERSION, type CallRecord, type SessionInfo } from "../../src/icr/records.js";
import type { RolloutBundle } from "../../src/store/types.js";

/** A realistic call record: `promptLength` prompt tokens, a tool call in the response, logprobs per completion token. */
export function makeRecord(overrides: Partial<CallRecord> = {}, promptLength = 64): CallRecord {
  const completionTokens = [104, 105, 259, 123, 125, 260, 258];
  const messages: ChatMessage[] = [
    { role: "system", content: "You are a careful agent." },
    { role: "user", content: "List the files. ünïcødé ✓" },
  ];
  return {
    schemaVersion: ICR_SCHEMA_VERSION,
    callId: newId("call"),
    sessionId: "ses_contract",
    rolloutId: "rol_1",
    harness: "claude-code",
    agentRole: "main",
    agentId: null,
    protocol: "anthropic-messages",
    stream: true,
    status: "ok",
    error: null,
    rawRequest: { model: "tiny", messages: [{ role: "user", content: "List the files." }], nested: { a: [1, 2, { b: null }] } },
    rawResponse: { id: "msg_1", content: [{ type: "tool_use", name: "ls", input: {} }] },
    messages,
    tools: [{ name: "ls", description: "list files", parameters: { type: "object", properties: { path: { type: "string" } } } }],
    response: { role: "assistant", content: "", toolCalls: [{ id: "toolu_1", name: "ls", arguments: "{}" }] },
    promptTokens: Array.from({ length: promptLength }, (_, i) => (i * 7919) % 265),
    completionTokens,
    logprobs: completionTokens.map((_, i) => -0.1 * (i + 1) - 1e-9),
    spans: { toolCalls: [{ name: "ls", action: [[2, 4], [5, 6]], args: [[4, 5]] }], malformed: 1 },
    policyVersion: 3,
    samplingRequested: { temperature: 0.2, max_tokens: 100 },
    samplingUsed: { temperature: 1, maxTokens: 512, topP: 1, topK: 0, minP: 0, seed: 42 },
    finishReason: "stop",
    timings: { receivedAt: 1_000, engineStartAt: 1_001, firstTokenAt: 1_002, engineEndAt: 1_003, recordedAt: 1_004 },
    parentCallId: null,
    reusedPrefixTokens: 0,
    break: null,
    spawnedByCallId: null,
    // ICR schema 5: every store keeps which engine instance sampled the call.
    engineInstance: "llamacpp@node-a/4242/0f1e2d3c",
    ...overrides,
  };
}

export function makeSession(overrides: Partial<SessionInfo> = {}): SessionInfo {
  return {
    sessionId: newId("ses"),
    rolloutId: "rol_1",
    harness: "codex",
    agentRole: "main",
    parentSessionId: null,
    spawnedByCallId: null,
    createdAt: 1_000,
    metadata: { task: "task_0001", tags: ["a", "b"] },
    ...overrides,
  };
}

/** What a store must give back for `r`: the same record with logprobs at float32 precision. */
export function asStored(r: CallRecord): CallRecord {
  return { ...r, logprobs: r.logprobs.map((x) => Math.fround(x)) };
}

/**
 * A finished rollout as a node ships it: a main session with two turns (the second extends the first token for
 * token, so stores that keep deltas use them) and a sub-agent session spawned by the first turn.
 */
export function makeBundle(rolloutId = newId("rol"), overrides: Partial<RolloutBundle> = {}): RolloutBundle {
  const main = makeSession({ rolloutId, createdAt: 1_000 });
  const first = makeRecord({ rolloutId, sessionId: main.sessionId });
  const second = makeRecord({
    rolloutId,
    sessionId: main.sessionId,
    parentCallId: first.callId,
    promptTokens: [...first.promptTokens, ...first.completionTokens, 7, 8, 9],
    reusedPrefixTokens: first.promptTokens.length + first.completionTokens.length,
    messages: [...first.messages, { role: "assistant", content: "", toolCalls: [{ id: "toolu_1", name: "ls", arguments: "{}" }] }, { role: "tool", content: "a.txt", toolCallId: "toolu_1" }],
  });
  const sub = makeSession({ rolloutId, createdAt: 1_001, agentRole: "subagent", parentSessionId: main.sessionId, spawnedByCallId: first.callId });
  const subCall = makeRecord({ rolloutId, sessionId: sub.sessionId, agentRole: "subagent", spawnedByCallId: first.callId, policyVersion: 4 });
  return { bundleVersion: 1, rolloutId, attempt: 1, nodeId: "node-a", sessions: [main, sub], calls: [first, second, subCall], result: { rolloutId, reward: 0.5, status: "ok", tags: ["x"] }, ...overrides };
}
