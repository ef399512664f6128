import { Registry } from "../core/registry.js";
import type { SchedulerConfig } from "./config.js";
import type { HarnessScheduler } from "./types.js";

/** Builds a scheduler from its parsed config section; `seed` is the run's seed, used when the section names none. */
export type SchedulerFactory = (config: SchedulerConfig, harnesses: readonly string[], seed: number) => HarnessScheduler;

/** A harness scheduler as registered by the name its config section gives (`round-robin`, …). */
export interface SchedulerAdapter {
  name: string;
  summary: string;
  create: SchedulerFactory;
}

/** The harness schedulers; filled by registerBuiltins() (src/builtins.ts) and library users. */
export const schedulers = new Registry<SchedulerAdapter>("scheduler", "unknown_scheduler");

export function registerScheduler(adapter: SchedulerAdapter): void {
  schedulers.register(adapter);
}

export function listSchedulers(): { name: string; summary: string }[] {
  return schedulers.list();
}

export function createScheduler(config: SchedulerConfig, harnesses: readonly string[], seed = 0): HarnessScheduler {
  return schedulers.get(config.name).create(config, harnesses, seed);
}
