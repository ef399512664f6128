import type { Codec } from "../chat/codec.js";
import { UserError } from "../core/errors.js";
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

interface Entry {
  factory: EngineFactory;
  summary: string;
}

const engines = new Map<string, Entry>();

/** Adapters register themselves by scheme (`scripted`, `llamacpp`, `vllm`, …). */
export function registerEngine(scheme: string, summary: string, factory: EngineFactory): void {
  engines.set(scheme, { factory, summary });
}

export function listEngines(): { scheme: string; summary: string }[] {
  return [...engines.entries()].map(([scheme, e]) => ({ scheme, summary: e.summary }));
}

/** From a structured spec, or from the CLI's `scheme:target?options` text (parsed here, once). */
export async function createEngine(spec: EngineSpec | string, options: EngineFactoryOptions = {}): Promise<SamplingEngine> {
  const s = typeof spec === "string" ? parseEngineSpec(spec) : spec;
  const entry = engines.get(s.kind);
  if (!entry) {
    const known = [...engines.keys()].sort().join(", ");
    throw new UserError("unknown_engine", `unknown engine "${s.kind}"${typeof spec === "string" ? ` in spec "${spec}"` : ""} (known: ${known})`);
  }
  return entry.factory(s, options);
}
