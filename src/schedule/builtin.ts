import { banditConfig } from "./config.js";
import { HarnessBanditScheduler } from "./harness-bandit.js";
import type { SchedulerAdapter } from "./registry.js";
import { RoundRobinScheduler } from "./round-robin.js";
import { UniformScheduler } from "./uniform.js";

/** The built-in harness schedulers (registered by src/builtins.ts). */
export const builtinSchedulers: readonly SchedulerAdapter[] = [
  { name: "round-robin", summary: "cycle through the harnesses in config order", create: (_c, harnesses) => new RoundRobinScheduler(harnesses) },
  {
    name: "uniform",
    summary: "uniformly random harness per step (seeded)",
    create: (c, harnesses, seed) => new UniformScheduler(harnesses, c.name === "uniform" ? (c.seed ?? seed) : seed),
  },
  {
    name: "harness-bandit",
    summary: "learnability × transferability bandit with exploration bonus and probability floor",
    create: (c, harnesses, seed) =>
      new HarnessBanditScheduler(harnesses, c.name === "harness-bandit" ? c : banditConfig(), c.name === "harness-bandit" ? (c.seed ?? seed) : seed),
  },
];
