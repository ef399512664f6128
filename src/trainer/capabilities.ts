import { UserError } from "../core/errors.js";
import type { CapabilityTrainers, CapoTrainer, CriticTrainer, LoraTrainer, SketchTrainer, Trainer, TrainerCapability } from "./types.js";

/**
 * The methods each optional capability adds to the core contract. A backend has a capability when it lists it in
 * `info.capabilities` and implements these methods; the guards check both, so a narrowed trainer is safe to call.
 */
export const CAPABILITY_METHODS: { readonly [K in TrainerCapability]: readonly Exclude<keyof CapabilityTrainers[K], keyof Trainer>[] } = {
  critic: ["criticInit", "criticValues", "criticForwardBackward", "criticOptimStep", "criticSave", "criticLoad"],
  capo: ["capoProbe"],
  grad_sketch: ["gradSketch"],
  lora: ["loraInit"],
};

export const TRAINER_CAPABILITIES = Object.keys(CAPABILITY_METHODS) as TrainerCapability[];

/** What each capability is for, in words (error messages, `harnessrl doctor`). */
export const CAPABILITY_SUMMARIES: Readonly<Record<TrainerCapability, string>> = {
  critic: "PPO critic (value model beside the policy)",
  capo: "CAPO parameter partitions and partition-routed updates",
  grad_sketch: "gradient sketches (HarnessBandit transferability)",
  lora: "LoRA adapters on a frozen base",
};

export function hasCapability<K extends TrainerCapability>(trainer: Trainer, capability: K): trainer is CapabilityTrainers[K] {
  if (!trainer.info.capabilities.includes(capability)) return false;
  const methods: readonly string[] = CAPABILITY_METHODS[capability];
  return methods.every((m) => typeof (trainer as unknown as Record<string, unknown>)[m] === "function");
}

export function hasCritic(trainer: Trainer): trainer is CriticTrainer {
  return hasCapability(trainer, "critic");
}

export function hasCapo(trainer: Trainer): trainer is CapoTrainer {
  return hasCapability(trainer, "capo");
}

export function hasGradSketch(trainer: Trainer): trainer is SketchTrainer {
  return hasCapability(trainer, "grad_sketch");
}

export function hasLora(trainer: Trainer): trainer is LoraTrainer {
  return hasCapability(trainer, "lora");
}

/** The capabilities a trainer really has (declared and implemented). */
export function capabilitiesOf(trainer: Trainer): TrainerCapability[] {
  return TRAINER_CAPABILITIES.filter((c) => hasCapability(trainer, c));
}

/**
 * The trainer narrowed to `capability`, or a UserError naming what asked for it (`purpose`, e.g. a config key) and
 * what the backend has instead.
 */
export function requireCapability<K extends TrainerCapability>(trainer: Trainer, capability: K, purpose: string): CapabilityTrainers[K] {
  if (hasCapability(trainer, capability)) return trainer;
  const has = capabilitiesOf(trainer);
  throw new UserError(
    "unsupported_trainer_capability",
    `${purpose} needs the trainer capability "${capability}" (${CAPABILITY_SUMMARIES[capability]}), which trainer "${trainer.info.backend}" lacks (it has: ${has.length ? has.join(", ") : "the core contract only"})`,
    { details: { capability, backend: trainer.info.backend, has } },
  );
}
