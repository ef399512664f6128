import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { defaultCodec, type Codec } from "../../chat/codec.js";
import { parseChatMLPrompt } from "../../chat/chatml-prompt.js";
import { renderAssistantTurn } from "../../chat/render-turn.js";
import type { ChatRenderer } from "../../chat/renderer.js";
import type { AssistantTurn } from "../../chat/types.js";
import { EngineError, UserError, errorMessage, isHarnessRLError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import type { Tokenizer } from "../../tokenizer/types.js";
import type { FinishReason, GenerateContext, GenerateRequest, GenerateResult, ModelInfo, SamplingEngine } from "../types.js";
import { scriptReplySchema, toScriptRequest } from "./script-types.js";
import type { ScriptFunction } from "./script-types.js";

export const SCRIPTED_DEFAULT_CONTEXT = 262_144;

const ABORTED = Symbol("aborted");

/** Resolves with the script's reply, or with ABORTED as soon as the signal fires (a slow script is not waited for). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T | typeof ABORTED> {
  if (!signal) return work;
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e instanceof Error ? e : new EngineError("scripted_failed", String(e)));
      },
    );
  });
}

export interface ScriptedEngineOptions {
  /** Engine spec reported to records; default `scripted:<inline>`. */
  spec?: string;
  /** Context window in tokens (default 262144). */
  contextWindow?: number;
  /** Pause between emitted tokens, to exercise streaming and client aborts with real timing. */
  tokenDelayMs?: number;
  modelId?: string;
  /**
   * Tokenizer + chat template to render turns with: the policy's, so scripted (and oracle) calls carry the token ids
   * the policy would have sampled. Default: the tiny byte codec (no model involved).
   */
  codec?: Codec;
}

/**
 * A JavaScript function plays the model: it gets the normalised conversation and returns the assistant turn, which
 * is rendered with the given codec (the policy's; default: the tiny byte codec) exactly as a model following the
 * template would have sampled it. Every token has logprob 0 (the script is deterministic) and policy version 0. Without
 * a conversation context (bare prompt tokens) the conversation is recovered from the prompt text, which assumes a
 * ChatML template.
 */
export class ScriptedEngine implements SamplingEngine {
  readonly spec: string;
  readonly model: ModelInfo;
  readonly tokenizer: Tokenizer;
  readonly renderer: ChatRenderer;
  readonly policyVersion = 0;
  private readonly tokenDelayMs: number;
  private closed = false;

  constructor(
    private readonly script: ScriptFunction,
    options: ScriptedEngineOptions = {},
  ) {
    const codec = options.codec ?? defaultCodec();
    this.tokenizer = codec.tokenizer;
    this.renderer = codec.renderer;
    this.spec = options.spec ?? "scripted:<inline>";
    this.model = { id: options.modelId ?? "scripted", contextWindow: options.contextWindow ?? SCRIPTED_DEFAULT_CONTEXT };
    this.tokenDelayMs = options.tokenDelayMs ?? 0;
  }

  async generate(request: GenerateRequest): Promise<GenerateResult> {
    if (this.closed) throw new EngineError("engine_closed", "the scripted engine is closed");
    const ctx = request.context ?? this.contextFromPrompt(request.promptTokens);
    const room = this.model.contextWindow - request.promptTokens.length;
    if (room <= 0) {
      throw new UserError("context_length_exceeded", `prompt has ${request.promptTokens.length} tokens; the context window is ${this.model.contextWindow}`);
    }
    const aborted = (): GenerateResult => ({ tokens: [], logprobs: [], finishReason: "abort", policyVersion: this.policyVersion });
    if (request.signal?.aborted) return aborted();

    let reply: unknown;
    try {
      reply = await untilAborted(Promise.resolve().then(() => this.script(toScriptRequest(ctx))), request.signal);
    } catch (e) {
      if (isHarnessRLError(e)) throw e;
      throw new EngineError("scripted_failed", `the scripted engine's function threw: ${errorMessage(e)}`, { cause: e });
    }
    if (reply === ABORTED || request.signal?.aborted) return aborted();
    const parsed = scriptReplySchema.safeParse(reply ?? {});
    if (!parsed.success) {
      throw new EngineError("invalid_scripted_reply", `the scripted engine's function returned an invalid turn: ${z.prettifyError(parsed.error)}`);
    }
    const turn: AssistantTurn = {};
    if (parsed.data.content) turn.content = parsed.data.content;
    if (parsed.data.reasoning) turn.reasoning = parsed.data.reasoning;
    if (parsed.data.toolCalls && parsed.data.toolCalls.length > 0) turn.toolCalls = parsed.data.toolCalls;
    const { tokens: all } = renderAssistantTurn({ tokenizer: this.tokenizer, renderer: this.renderer }, ctx.messages, ctx.tools, turn);

    const limit = Math.min(request.params.maxTokens, room);
    const stops = new Set(this.tokenizer.stopTokenIds);
    const tokens: number[] = [];
    const logprobs: number[] = [];
    let finishReason: FinishReason = "length";
    for (const id of all) {
      if (tokens.length >= limit) break;
      if (this.tokenDelayMs > 0 && tokens.length > 0) await sleep(this.tokenDelayMs);
      if (request.signal?.aborted) {
        finishReason = "abort";
        break;
      }
      tokens.push(id);
      logprobs.push(0);
      request.onToken?.(id, 0);
      // Like a real engine, generation ends at the first stop token.
      if (stops.has(id)) {
        finishReason = "stop";
        break;
      }
    }
    return { tokens, logprobs, finishReason, policyVersion: this.policyVersion };
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** Driven with bare tokens (benchmarks, the shared engine contract): recover the conversation from the prompt. */
  private contextFromPrompt(promptTokens: readonly number[]): GenerateContext {
    const { messages, tools } = parseChatMLPrompt(this.tokenizer.decode(promptTokens));
    return { sessionId: "", callId: newId("call"), messages, tools };
  }
}

/** A scripted engine from a function (tests, the oracle engine). */
export function createScriptedEngine(script: ScriptFunction, options: ScriptedEngineOptions = {}): ScriptedEngine {
  return new ScriptedEngine(script, options);
}
