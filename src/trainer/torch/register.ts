import type { TrainerAdapter } from "../registry.js";
import { TorchTrainer } from "./torch-trainer.js";

/** The `torch` trainer adapter (registered by src/builtins.ts). */
export const torchTrainerAdapter: TrainerAdapter = {
  name: "torch",
  summary: "local PyTorch worker process (torch:<device> picks cpu, cuda, cuda:N)",
  create: (arg, options) => TorchTrainer.start({ ...options, device: arg || options.device }),
};
