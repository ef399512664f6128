import { parseSpec, Registry } from "../core/registry.js";
import type { Task } from "../tasks/task.js";
import type { SamplingEngine } from "./types.js";

export interface EngineFactoryOptions {
  /** Default model directory when the spec names none (tiny built-in tokenizer/template otherwise). */
  modelDir?: string;
  /** Which task each rollout runs: the oracle engine needs it; the rollout runner provides it. */
  tasks?: { taskForRollout(rolloutId: string): Task | undefined };
}

/** Creates an engine from the part of the spec after `scheme:` (may be empty). */
export type EngineFactory = (arg: string, options: EngineFactoryOptions) => Promise<SamplingEngine>;

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

/** `scheme` or `scheme:arg`; the arg may itself contain colons (URLs). */
export async function createEngine(spec: string, options: EngineFactoryOptions = {}): Promise<SamplingEngine> {
  const { scheme, arg } = parseSpec(spec);
  return engines.get(scheme, `engine spec "${spec}"`).create(arg, options);
}
