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
