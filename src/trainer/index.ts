// The trainer layer's registry. Adapters do not register themselves: src/builtins.ts registers the built-in ones.
export { createTrainer, listTrainers, registerTrainer, trainers } from "./registry.js";
export type { TrainerAdapter, TrainerFactory } from "./registry.js";
export { torchTrainerAdapter } from "./torch/register.js";
