import type { ChatRenderer } from "../chat/renderer.js";
import type { ChatMessage, ToolSpec } from "../chat/types.js";
import type { Tokenizer } from "../tokenizer/types.js";

/**
 * The sampling parameters actually used for a generation. For RL the defaults sample from the untruncated
 * distribution (topK 0, topP 1, minP 0) at the configured temperature, so the returned logprobs are the
 * probabilities the tokens were really drawn with.
 */
export interface SamplingParams {
  temperature: number;
  maxTokens: number;
  topP: number;
  topK: number;
  minP: number;
  /** Per-request seed; engines must honour it per sequence. */
  seed?: number;
}

export const DEFAULT_SAMPLING: SamplingParams = { temperature: 1, maxTokens: 512, topP: 1, topK: 0, minP: 0 };

export type FinishReason = "stop" | "length" | "abort";

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
