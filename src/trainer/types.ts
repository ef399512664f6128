import type { PackedBatch } from "../batch/types.js";

/**
 * The trainer contract: what the orchestrator needs from a training backend. Adapters register by name
 * (src/trainer/registry.ts); the first is the local PyTorch worker ("torch"). Later issues add forward/backward with
 * RL losses, optimizer steps and checkpoints as new methods here and new ops in the worker.
 */
export interface TrainerInfo {
  /** Adapter name, e.g. "torch". */
  backend: string;
  protocol: number;
  torchVersion: string;
  device: string;
  threads: number;
  /** Operations the backend supports (the worker's op names). */
  ops: string[];
  presets: PresetInfo[];
}

export interface PresetInfo {
  name: string;
  description: string;
  parameters: number;
  modelType: string;
}

export interface LoadedModelInfo {
  dir: string | null;
  parameters: number;
  dtype: string;
  device: string;
  policyVersion: number;
  /** The config.json contents (HF fields + "harnessrl"). */
  config: Record<string, unknown>;
}

export interface InitOptions {
  preset: string;
  seed: number;
  /** Directory to write (config.json, model.safetensors, tokenizer files, chat template). */
  out: string;
  /** Override the preset's layout: qwen2 (qkv biases) or qwen3 (q/k norm, default). */
  modelType?: "qwen2" | "qwen3";
  /** Chat template text; default: the repo's templates/chatml-tools.jinja. */
  chatTemplate?: string;
}

export type WeightDtype = "float32" | "bfloat16" | "float16";

export interface LoadOptions {
  /** Compute dtype; "auto" = the checkpoint's torch_dtype. Default float32. */
  dtype?: WeightDtype | "auto";
  /** Attention kernel: auto (SDPA on accelerators with torch ≥ 2), eager, sdpa. */
  attention?: "auto" | "eager" | "sdpa";
}

export interface SaveOptions {
  /** Stamp config.json's harnessrl.policy_version. */
  policyVersion?: number;
  dtype?: WeightDtype;
}

export interface LogprobsOptions {
  /** Scores log_softmax(logits / T): use the temperature the engine sampled with. Default 1. */
  temperature?: number;
  /** Also compute per-token entropy. Default true. */
  entropy?: boolean;
}

/** Per row of the batch, aligned with the row's tokens; tree roots (parent -1) get 0. */
export interface TokenScores {
  logprobs: Float32Array[];
  entropy: Float32Array[] | null;
  policyVersion: number;
}

export interface Trainer {
  readonly info: TrainerInfo;
  /** Creates a model directory from a preset and keeps that model loaded. */
  init(options: InitOptions): Promise<LoadedModelInfo>;
  load(dir: string, options?: LoadOptions): Promise<LoadedModelInfo>;
  /** Writes the loaded model to `dir` (default: where it was loaded from). */
  save(dir?: string, options?: SaveOptions): Promise<LoadedModelInfo>;
  /** Teacher-forced per-token logprobs (and entropy) for a packed batch; no gradients. */
  logprobs(batch: PackedBatch, options?: LogprobsOptions): Promise<TokenScores>;
  close(): Promise<void>;
}

export interface TrainerOptions {
  device?: string;
  threads?: number;
  python?: string;
  requestTimeoutMs?: number;
  onStderr?: (line: string) => void;
}
