import { availableParallelism } from "node:os";
import { homedir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { UserError } from "../../core/errors.js";
import { formatEngineSpec, stringOptions, type EngineSpec } from "../spec.js";

/**
 * Options of `llamacpp:<model dir>?threads=1&sequences=8&ctx=8192&kv=f32&fa=0&batch=isolated&contexts=1&share=1024&share_mb=2048&cache=<dir>`
 * (structured: `{ kind: "llamacpp", modelDir, options: { threads, sequences, … } }`).
 * Defaults favour exactness (F32 KV cache, no flash attention: llama.cpp's CPU flash attention rounds through F16
 * and costs ~1e-2 in logprob) and leave one core free for the proxy and trainer.
 */
export interface LlamaCppOptions {
  modelDir: string;
  threads: number;
  /** Parallel sequences: that many requests run at once; more wait. */
  sequences: number;
  /**
   * `isolated` (default): one llama.cpp context per sequence; contexts decode in parallel, never in one batch.
   * `shared`: the sequences spread over `contexts` contexts, each decoding its running requests in one batch per step
   * (lockstep-batcher.ts; the sampling race node-llama-cpp 3.21.1 has there is closed by output-reorder-gate.ts).
   */
  batch: "isolated" | "shared";
  /** `batch=shared` only: contexts the sequences are spread over (each decodes its own batch, in parallel). */
  contexts: number;
  /** Context size per sequence (tokens); undefined = min(8192, max_position_embeddings). */
  contextSize: number | undefined;
  kvType: "F32" | "F16";
  /**
   * Shared prompt prefixes (prefix-states.ts): a prefix of at least this many new tokens is evaluated once and loaded
   * by every other sequence whose prompt starts with it; 0 turns sharing off. Only with more than one sequence.
   */
  shareMinTokens: number;
  /** Cap on the shared prefixes' state files, in bytes. */
  shareMaxBytes: number;
  flashAttention: boolean;
  cacheDir: string;
}

const intParam = (name: string, min: number, max: number) =>
  z.coerce.number({ error: `${name} must be a number` }).int(`${name} must be an integer`).min(min).max(max).optional();

const querySchema = z
  .object({
    threads: intParam("threads", 1, 256),
    sequences: intParam("sequences", 1, 1024),
    ctx: intParam("ctx", 16, 1 << 20),
    kv: z.enum(["f32", "f16"]).optional(),
    fa: z.enum(["0", "1"]).optional(),
    cache: z.string().min(1).optional(),
    batch: z.enum(["isolated", "shared"]).optional(),
    contexts: intParam("contexts", 1, 1024),
    share: intParam("share", 0, 1 << 20),
    share_mb: intParam("share_mb", 1, 1 << 20),
  })
  .strict();

/**
 * A shared prefix must save at least this much evaluation: below it, writing and loading a state file is not worth
 * the bookkeeping (the quickstart's ~760-token prompts are not shared; Claude Code's and OpenClaw's are).
 */
export const DEFAULT_SHARE_MIN_TOKENS = 1024;
/** 2 GiB of state files: ~100 Claude Code prefixes of qwen3-tiny, or one ~7k-token prefix of a 28-layer Qwen3 in F32. */
export const DEFAULT_SHARE_MB = 2048;

export function defaultThreads(): number {
  return Math.max(1, Math.min(8, availableParallelism() - 1));
}

export function defaultCacheDir(): string {
  return process.env.HARNESSRL_CACHE_DIR ? join(process.env.HARNESSRL_CACHE_DIR, "gguf") : join(homedir(), ".cache", "harnessrl", "gguf");
}

/** The adapter's options from a structured spec: the model directory is the target, else `modelDir`. */
export function llamaCppOptions(spec: EngineSpec): LlamaCppOptions {
  const modelDir = spec.target || spec.modelDir;
  const text = formatEngineSpec(spec);
  if (!modelDir) throw new UserError("invalid_engine_spec", "llamacpp needs a model directory: llamacpp:<model dir>[?threads=N&sequences=N&ctx=N&kv=f32|f16&fa=0|1&batch=isolated|shared&contexts=N&share=N&share_mb=N&cache=DIR]");
  const r = querySchema.safeParse(stringOptions(spec));
  if (!r.success) throw new UserError("invalid_engine_spec", `llamacpp spec "${text}": ${z.prettifyError(r.error)}`);
  const o = r.data;
  const sequences = o.sequences ?? 8;
  const batch = o.batch ?? "isolated";
  if (o.contexts !== undefined && (batch !== "shared" || o.contexts > sequences)) {
    throw new UserError("invalid_engine_spec", `llamacpp spec "${text}": contexts=${o.contexts} needs batch=shared and at most sequences=${sequences}`);
  }
  return {
    modelDir,
    threads: o.threads ?? defaultThreads(),
    sequences,
    batch,
    contexts: o.contexts ?? 1,
    contextSize: o.ctx,
    kvType: o.kv === "f16" ? "F16" : "F32",
    flashAttention: o.fa === "1",
    shareMinTokens: o.share ?? DEFAULT_SHARE_MIN_TOKENS,
    shareMaxBytes: (o.share_mb ?? DEFAULT_SHARE_MB) * 1024 * 1024,
    cacheDir: o.cache ?? defaultCacheDir(),
  };
}
