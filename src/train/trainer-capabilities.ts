import { createScheduler } from "../schedule/index.js";
import { requireCapability } from "../trainer/capabilities.js";
import type { Trainer, TrainerCapability } from "../trainer/types.js";
import type { RunConfig } from "./config.js";
import { advantageConfigOf } from "./rl-step.js";

export interface CapabilityNeed {
  capability: TrainerCapability;
  /** The config setting that asks for it, as the error names it. */
  reason: string;
}

/** The optional trainer capabilities a run config uses (the core contract is always needed). */
export function trainerNeeds(config: RunConfig): CapabilityNeed[] {
  const needs: CapabilityNeed[] = [];
  if (advantageConfigOf(config).estimator === "ppo") needs.push({ capability: "critic", reason: 'advantage estimator "ppo"' });
  if (config.capo?.enabled) needs.push({ capability: "capo", reason: "capo.enabled" });
  if (config.model.lora) needs.push({ capability: "lora", reason: "model.lora" });
  // The scheduler itself says whether it compares gradient sketches (HarnessBandit does); building one is cheap and pure.
  if (config.mix === "scheduled" && config.scheduler) {
    const scheduler = createScheduler(config.scheduler, config.harnesses, config.seed);
    if (scheduler.sketchOptions) needs.push({ capability: "grad_sketch", reason: `scheduler "${scheduler.name}"` });
  }
  return needs;
}

/**
 * Fails with a UserError (`unsupported_trainer_capability`) naming the config setting when the run asks for a capability
 * the trainer backend lacks; called right after the trainer starts, before any model, warm start or rollout.
 */
export function checkTrainerCapabilities(trainer: Trainer, config: RunConfig): void {
  for (const need of trainerNeeds(config)) requireCapability(trainer, need.capability, `the config's ${need.reason}`);
}
