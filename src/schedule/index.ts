// Harness schedulers for scheduled mix-harness training. Schedulers do not register themselves: src/builtins.ts
// registers the built-in ones.
import { BANDIT_DEFAULTS, banditConfig, parseSchedulerConfig, schedulerConfigSchema } from "./config.js";
import { HarnessBanditScheduler } from "./harness-bandit.js";
import { RoundRobinScheduler } from "./round-robin.js";
import { UniformScheduler } from "./uniform.js";

export { BANDIT_DEFAULTS, banditConfig, parseSchedulerConfig, schedulerConfigSchema, HarnessBanditScheduler, RoundRobinScheduler, UniformScheduler };
export { builtinSchedulers } from "./builtin.js";
export { createScheduler, listSchedulers, registerScheduler, schedulers } from "./registry.js";
export type { SchedulerAdapter, SchedulerFactory } from "./registry.js";
export type { BanditConfig, SchedulerConfig } from "./config.js";
export type { HarnessScheduler, ProbeObservation, ProbePlan, SchedulerChoice, SchedulerObservation, SchedulerState } from "./types.js";
