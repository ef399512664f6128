import type { ChatRenderer } from "../chat/renderer.js";
import type { ChatMessage, ToolSpec } from "../chat/types.js";
import type { FinishReason, SamplingParams } from "../icr/sampling.js";
import type { Tokenizer } from "../tokenizer/types.js";

// What a call was sampled with is ICR vocabulary (every record stores it); the engine contract speaks it too.
export { DEFAULT_SAMPLING, type FinishReason, type SamplingParams } from "../icr/sampling.js";

/** What the proxy knows about the call; real engines ignore it, scripted and oracle engines use it. */
export interface GenerateContext {
  sessionId: string;
  callId: string;
  rolloutId?: string;
  harness?: string;
  messages: readonly ChatMessage[];
  tools: readonly ToolSpec[];
}

export interface GenerateRequest {
  promptTokens: readonly number[];
  params: SamplingParams;
  context?: GenerateContext;
  signal?: AbortSignal;
  /** Called for each sampled token as soon as it exists (drives real SSE streaming). */
  onToken?: (tokenId: number, logprob: number) => void;
}

export interface GenerateResult {
  tokens: number[];
  /** log π_sample(token) per sampled token, under the distribution it was actually sampled from. */
  logprobs: number[];
  finishReason: FinishReason;
  /** Version of the weights that sampled these tokens. */
  policyVersion: number;
  /**
   * The running engine that sampled them (a llama.cpp engine's instance id, also when it is served over HTTP by
   * `harnessrl serve`; a remote server's URL), recorded on each call. Absent for engines without one (scripted, oracle).
   */
  engineInstance?: string;
}

export interface ModelInfo {
  /** Served model id (what `GET /v1/models` lists). */
  id: string;
  contextWindow: number;
}

/**
 * The narrow contract between the proxy and any inference engine: local tokenizer + chat template, and token-in /
 * token-out generation. Implementations: scripted, oracle, llamacpp, vllm, sglang.
 */
export interface SamplingEngine {
  /** The spec it was created from, e.g. `llamacpp:/models/tiny`. */
  readonly spec: string;
  readonly model: ModelInfo;
  readonly tokenizer: Tokenizer;
  readonly renderer: ChatRenderer;
  /** The policy version new generations will be stamped with. */
  readonly policyVersion: number;
  generate(request: GenerateRequest): Promise<GenerateResult>;
  close(): Promise<void>;
}

/** Engines that can switch weights between training steps without dropping in-flight requests. */
export interface HotSwappableEngine extends SamplingEngine {
  loadPolicy(modelDir: string, version: number): Promise<void>;
}

export function isHotSwappable(e: SamplingEngine): e is HotSwappableEngine {
  return typeof (e as Partial<HotSwappableEngine>).loadPolicy === "function";
}

/**
 * Prompt tokens since the engine started: `evaluated` went through the model, `reused` came from a sequence's own KV
 * cache (the prefix it shared with an earlier call; a harness's next turn only evaluates what it added), `shared` from a
 * prefix another sequence evaluated and published (a GRPO group's sessions evaluate their common prompt once).
 */
export interface PromptTokenCounts {
  evaluated: number;
  reused: number;
  shared: number;
}

/** Engines that count where their prompt tokens came from (llama.cpp); training logs the counts per step. */
export interface PromptCountingEngine extends SamplingEngine {
  readonly promptTokens: Readonly<PromptTokenCounts>;
}

export function countsPromptTokens(e: SamplingEngine): e is PromptCountingEngine {
  const p = (e as Partial<PromptCountingEngine>).promptTokens;
  return typeof p === "object" && p !== null && typeof p.evaluated === "number";
}
