import { parseSpec, Registry } from "../core/registry.js";
import type { Trainer, TrainerOptions } from "./types.js";

/** Creates a trainer from the part of the spec after `name:` (may be empty). */
export type TrainerFactory = (arg: string, options: TrainerOptions) => Promise<Trainer>;

/** A trainer backend as registered: `name` is the spec's scheme (`torch`, …). */
export interface TrainerAdapter {
  name: string;
  summary: string;
  create: TrainerFactory;
}

/** The trainer backends; filled by registerBuiltins() (src/builtins.ts) and library users. */
export const trainers = new Registry<TrainerAdapter>("trainer", "unknown_trainer");

export function registerTrainer(adapter: TrainerAdapter): void {
  trainers.register(adapter);
}

export function listTrainers(): { name: string; summary: string }[] {
  return trainers.list();
}

/** `name` or `name:arg`, e.g. `torch` or `torch:cuda:1` (the arg is the adapter's, here a device). */
export async function createTrainer(spec: string, options: TrainerOptions = {}): Promise<Trainer> {
  const { scheme, arg } = parseSpec(spec);
  return trainers.get(scheme, `trainer spec "${spec}"`).create(arg, options);
}
