// Harness schedulers for scheduled mix-harness training. Importing this module registers the built-in schedulers.
import { BANDIT_DEFAULTS, banditConfig, parseSchedulerConfig, schedulerConfigSchema } from "./config.js";
import { HarnessBanditScheduler } from "./harness-bandit.js";
import { registerScheduler } from "./registry.js";
import { RoundRobinScheduler } from "./round-robin.js";
import { UniformScheduler } from "./uniform.js";

registerScheduler("round-robin", "cycle through the harnesses in config order", (_c, harnesses) => new RoundRobinScheduler(harnesses));
registerScheduler("uniform", "uniformly random harness per step (seeded)", (c, harnesses, seed) => new UniformScheduler(harnesses, c.name === "uniform" ? (c.seed ?? seed) : seed));
registerScheduler("harness-bandit", "learnability × transferability bandit with exploration bonus and probability floor", (c, harnesses, seed) =>
  new HarnessBanditScheduler(harnesses, c.name === "harness-bandit" ? c : banditConfig(), c.name === "harness-bandit" ? (c.seed ?? seed) : seed),
);

export { BANDIT_DEFAULTS, banditConfig, parseSchedulerConfig, schedulerConfigSchema, HarnessBanditScheduler, RoundRobinScheduler, UniformScheduler };
export { createScheduler, listSchedulers, registerScheduler } from "./registry.js";
export type { BanditConfig, SchedulerConfig } from "./config.js";
export type { HarnessScheduler, SchedulerChoice, SchedulerObservation, SchedulerState } from "./types.js";
