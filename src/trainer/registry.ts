import { UserError } from "../core/errors.js";
import type { Trainer, TrainerOptions } from "./types.js";

/** Creates a trainer from the part of the spec after `name:` (may be empty). */
export type TrainerFactory = (arg: string, options: TrainerOptions) => Promise<Trainer>;

interface Entry {
  factory: TrainerFactory;
  summary: string;
}

const trainers = new Map<string, Entry>();

/** Adapters register themselves by name ("torch", …). */
export function registerTrainer(name: string, summary: string, factory: TrainerFactory): void {
  trainers.set(name, { factory, summary });
}

export function listTrainers(): { name: string; summary: string }[] {
  return [...trainers.entries()].map(([name, e]) => ({ name, summary: e.summary }));
}

/** `name` or `name:arg`, e.g. `torch` or `torch:cuda:1` (the arg is the adapter's, here a device). */
export async function createTrainer(spec: string, options: TrainerOptions = {}): Promise<Trainer> {
  const i = spec.indexOf(":");
  const name = i < 0 ? spec : spec.slice(0, i);
  const entry = trainers.get(name);
  if (!entry) {
    const known = [...trainers.keys()].sort().join(", ");
    throw new UserError("unknown_trainer", `unknown trainer "${name}" in spec "${spec}" (known: ${known})`);
  }
  return entry.factory(i < 0 ? "" : spec.slice(i + 1), options);
}
