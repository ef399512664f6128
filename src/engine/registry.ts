import type { Codec } from "../chat/codec.js";
import { Registry } from "../core/registry.js";
import { parseEngineSpec, type EngineSpec } from "./spec.js";
import type { SamplingEngine } from "./types.js";

export interface EngineFactoryOptions {
  /**
   * The policy's codec (tokenizer + chat template), loaded once by the run context. Engines without a model of their
   * own (scripted) render with it; engines that load a model directory use that directory's, which is the same.
   */
  codec?: Codec;
}

/** Creates an engine from its structured spec. */
export type EngineFactory = (spec: EngineSpec, options: EngineFactoryOptions) => Promise<SamplingEngine>;

/** An engine adapter as registered: `name` is the spec's scheme (`scripted`, `llamacpp`, `vllm`, …). */
export interface EngineAdapter {
  name: string;
  summary: string;
  create: EngineFactory;
}

/** The engine adapters; filled by registerBuiltins() (src/builtins.ts) and library users. */
export const engines = new Registry<EngineAdapter>("engine", "unknown_engine");

export function registerEngine(adapter: EngineAdapter): void {
  engines.register(adapter);
}

export function listEngines(): { name: string; summary: string }[] {
  return engines.list();
}

/** From a structured spec, or from the CLI's `scheme:target?options` text (parsed here, once). */
export async function createEngine(spec: EngineSpec | string, options: EngineFactoryOptions = {}): Promise<SamplingEngine> {
  const s = typeof spec === "string" ? parseEngineSpec(spec) : spec;
  return engines.get(s.kind, typeof spec === "string" ? `engine spec "${spec}"` : undefined).create(s, options);
}
