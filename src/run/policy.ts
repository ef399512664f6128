import { resolve } from "node:path";
import { defaultCodec, loadCodec, type Codec } from "../chat/codec.js";
import type { EngineSpec } from "../engine/spec.js";
import { findPreset } from "../model/presets.js";
import { qwen3TokenizerFiles } from "../tokenizer/qwen3-data.js";
import type { RunConfig } from "../train/config.js";

/** Where a run's policy starts: a preset the trainer creates, a model directory, or another run's checkpoint. */
export type PolicyStart = { preset: string; seed: number; modelType?: "qwen2" | "qwen3" } | { dir: string } | { checkpoint: string };

/**
 * The policy a run trains or serves: where its weights start, its codec (tokenizer + chat template, read once from
 * its model directory) and how an engine serves it. Every token count, batch, mask and scripted/oracle rendering of
 * the run uses this codec, never an assumed default.
 */
export interface Policy {
  /** Null when the run does not train the weights it serves (CLI rollouts and evaluations). */
  start: PolicyStart | null;
  /** The model directory the codec was read from; null for a preset (made at run start) or no model at all. */
  modelDir: string | null;
  codec: Codec;
  /** How the policy is served; `modelDir` is filled per policy version (`servePolicy`). */
  engine: EngineSpec;
}

/** A policy a run trains: it always has a start. */
export interface TrainedPolicy extends Policy {
  start: PolicyStart;
}

/** The structured engine spec of the config's `engine` section (no text is assembled or parsed). */
export function engineOfConfig(e: RunConfig["engine"]): EngineSpec {
  if (e.kind === "llamacpp") {
    const options: Record<string, number | string> = { sequences: e.sequences };
    if (e.threads !== undefined) options.threads = e.threads;
    if (e.batch) options.batch = e.batch;
    if (e.contexts !== undefined) options.contexts = e.contexts;
    if (e.context_size !== undefined) options.ctx = e.context_size;
    if (e.share_prefix !== undefined) options.share = e.share_prefix;
    return { kind: e.kind, target: "", options };
  }
  // `harnessrl serve`: its own context and threads; the trainer's engine makes it serve the run's current version.
  if (e.kind === "llamacpp-http") return { kind: e.kind, target: e.url ?? "", options: { sync: 1 } };
  const options: Record<string, number | string> = {};
  if (e.context_size !== undefined) options.ctx = e.context_size;
  if (e.reload_url !== undefined) options.reload_url = e.reload_url;
  return { kind: e.kind, target: e.url ?? "", options };
}

/**
 * The policy of a run config. Model directories and checkpoints (complete model directories) give their own codec;
 * presets use what `trainer.init` writes into their model directory: the byte tokenizer with the default ChatML +
 * tools template (tiny-*), or Qwen3's tokenizer files and official template (qwen3-*; docs/model-dir.md).
 */
export function policyOfConfig(config: RunConfig): TrainedPolicy {
  const m = config.model;
  const served = engineOfConfig(config.engine);
  // LoRA policies reach vLLM / SGLang as adapters (a few MB per version) rather than full weight reloads; llama.cpp
  // serves each version's merged weights.
  const engine = m.lora && served.kind !== "llamacpp" && served.kind !== "llamacpp-http" ? { ...served, options: { ...served.options, lora: 1 } } : served;
  if ("preset" in m) {
    const codec = findPreset(m.preset)?.tokenizer === "qwen3" ? loadCodec(qwen3TokenizerFiles().dir) : defaultCodec();
    return { start: { preset: m.preset, seed: m.seed, ...(m.model_type ? { modelType: m.model_type } : {}) }, modelDir: null, codec, engine };
  }
  // The worker runs in its own directory: keep absolute paths.
  if ("checkpoint" in m) {
    const dir = resolve(m.checkpoint);
    return { start: { checkpoint: dir }, modelDir: dir, codec: loadCodec(dir), engine };
  }
  const dir = resolve(m.dir);
  return { start: { dir }, modelDir: dir, codec: loadCodec(dir), engine };
}

/**
 * The policy behind a CLI engine spec (`harnessrl rollout|eval --engine … --model-dir …`): `--model-dir` gives the
 * codec that scripted and oracle engines render with (and engines that take a model directory their default one);
 * without it, the tiny byte codec. Engines that load their own model directory (llamacpp:<dir>) use its codec.
 */
export function policyOfEngine(engine: EngineSpec, modelDir: string | undefined): Policy {
  const dir = modelDir === undefined ? null : resolve(modelDir);
  return { start: null, modelDir: dir, codec: dir ? loadCodec(dir) : defaultCodec(), engine: dir ? { ...engine, modelDir: dir } : engine };
}

/** The engine spec serving the policy's weights in `modelDir` (a policy version's directory). */
export function servePolicy(policy: Policy, modelDir: string): EngineSpec {
  return { ...policy.engine, modelDir };
}
