import type { Codec } from "../../src/chat/codec.js";
import { renderAssistantTurn } from "../../src/chat/render-turn.js";
import type { AssistantTurn, ChatMessage, ToolSpec } from "../../src/chat/types.js";
import { newId } from "../../src/core/ids.js";
import type { HistoryPlanner, PromptPlan } from "../../src/history/types.js";
import { ICR_SCHEMA_VERSION, type CallRecord } from "../../src/icr/records.js";
import type { Store } from "../../src/store/types.js";
import { mulberry32 } from "../../src/core/random.js";

/**
 * Plays the proxy's part around the planner: plan → a "model" samples the given turn (rendered exactly as the template
 * would, like the scripted engine) → the record is stored and remembered. The planner and store are the real ones.
 */
export class SessionSim {
  readonly records: CallRecord[] = [];

  constructor(
    readonly planner: HistoryPlanner,
    readonly store: Store,
    readonly codec: Codec,
    readonly sessionId: string = newId("ses"),
  ) {}

  /**
   * One call. `truncateTo` cuts the sampled tokens (finish reason "length"); the response the harness sees is then the
   * cut text as plain content. Returns the record and the plan.
   */
  call(messages: ChatMessage[], tools: ToolSpec[], turn: AssistantTurn, opts: { truncateTo?: number; spellOut?: string[] } = {}): { record: CallRecord; plan: PromptPlan } {
    const plan = this.planner.plan(this.sessionId, { messages, tools }, this.codec);
    const sampled = renderAssistantTurn(this.codec, messages, tools, turn);
    let completionTokens = sampled.tokens;
    // A model may sample a special token's text as ordinary pieces (same text, other ids): spell those out.
    for (const special of opts.spellOut ?? []) {
      const id = this.codec.tokenizer.specialTokens.get(special);
      const pieces = [...Buffer.from(special, "utf8")];
      completionTokens = completionTokens.flatMap((t) => (t === id ? pieces : [t]));
    }
    let response: ChatMessage = {
      role: "assistant",
      content: turn.content ?? "",
      ...(turn.reasoning === undefined ? {} : { reasoning: turn.reasoning }),
      ...(turn.toolCalls && turn.toolCalls.length > 0
        ? { toolCalls: turn.toolCalls.map((c) => ({ id: newId("call"), name: c.name, arguments: JSON.stringify(c.arguments) })) }
        : {}),
    };
    let finishReason: CallRecord["finishReason"] = "stop";
    if (opts.truncateTo !== undefined) {
      completionTokens = completionTokens.slice(0, opts.truncateTo);
      response = { role: "assistant", content: this.codec.tokenizer.decode(completionTokens).trim() };
      finishReason = "length";
    }
    const record: CallRecord = {
      schemaVersion: ICR_SCHEMA_VERSION,
      callId: newId("call"),
      sessionId: this.sessionId,
      rolloutId: null,
      harness: "sim",
      agentRole: "main",
      agentId: null,
      protocol: "openai-chat",
      stream: false,
      status: "ok",
      error: null,
      rawRequest: null,
      rawResponse: null,
      messages: structuredClone(messages),
      tools: structuredClone(tools),
      response,
      promptTokens: plan.promptTokens,
      completionTokens,
      logprobs: completionTokens.map(() => -0.5),
      // The planner tests never read spans; a simulated turn's tool calls are not located in tokens.
      spans: { toolCalls: [], malformed: 0 },
      policyVersion: 0,
      samplingRequested: {},
      samplingUsed: null,
      finishReason,
      timings: { receivedAt: 0, engineStartAt: null, firstTokenAt: null, engineEndAt: null, recordedAt: 0 },
      parentCallId: plan.parentCallId,
      reusedPrefixTokens: plan.reusedPrefixTokens,
      break: plan.break,
      spawnedByCallId: null,
    };
    this.store.insertCall(record);
    this.planner.remember(record);
    this.records.push(record);
    return { record, plan };
  }
}

/** A JSON round trip: what a harness that parsed our response and sends it back gives us (fresh objects). */
export function echo<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** The tool results a harness would send for an assistant message's tool calls. */
export function toolResults(assistant: ChatMessage, result: (name: string, i: number) => string): ChatMessage[] {
  return (assistant.toolCalls ?? []).map((c, i) => ({ role: "tool", content: result(c.name, i), toolCallId: c.id }));
}

/** A small deterministic PRNG for generated data (the shared mulberry32). */
export const rng = mulberry32;
