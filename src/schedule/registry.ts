import { UserError } from "../core/errors.js";
import type { SchedulerConfig } from "./config.js";
import type { HarnessScheduler } from "./types.js";

/** Builds a scheduler from its parsed config section; `seed` is the run's seed, used when the section names none. */
export type SchedulerFactory = (config: SchedulerConfig, harnesses: readonly string[], seed: number) => HarnessScheduler;

const schedulers = new Map<string, { factory: SchedulerFactory; summary: string }>();

export function registerScheduler(name: string, summary: string, factory: SchedulerFactory): void {
  schedulers.set(name, { factory, summary });
}

export function listSchedulers(): { name: string; summary: string }[] {
  return [...schedulers.entries()].map(([name, e]) => ({ name, summary: e.summary }));
}

export function createScheduler(config: SchedulerConfig, harnesses: readonly string[], seed = 0): HarnessScheduler {
  const entry = schedulers.get(config.name);
  if (!entry) throw new UserError("unknown_scheduler", `unknown scheduler "${config.name}" (known: ${[...schedulers.keys()].sort().join(", ")})`);
  return entry.factory(config, harnesses, seed);
}
