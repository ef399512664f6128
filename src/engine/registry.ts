import { UserError } from "../core/errors.js";
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

/** `scheme` or `scheme:arg`; the arg may itself contain colons (URLs). */
export async function createEngine(spec: string, options: EngineFactoryOptions = {}): Promise<SamplingEngine> {
  const i = spec.indexOf(":");
  const scheme = i < 0 ? spec : spec.slice(0, i);
  const arg = i < 0 ? "" : spec.slice(i + 1);
  const entry = engines.get(scheme);
  if (!entry) {
    const known = [...engines.keys()].sort().join(", ");
    throw new UserError("unknown_engine", `unknown engine "${scheme}" in spec "${spec}" (known: ${known})`);
  }
  return entry.factory(arg, options);
}
