// The run context: how a run is composed (policy + codec + engine spec, trainers, stores, scheduler), built once.
export { buildRolloutJobContext, buildRunContext, openTrainer, runEngine, runStackOptions } from "./context.js";
export type { RolloutJobContext, RolloutJobOptions, RunContext, RunPaths, TrainerPlan } from "./context.js";
export { engineOfConfig, policyOfConfig, policyOfEngine, servePolicy } from "./policy.js";
export type { Policy, PolicyStart, TrainedPolicy } from "./policy.js";
