import { registerTrainer } from "../registry.js";
import { TorchTrainer } from "./torch-trainer.js";

registerTrainer("torch", "local PyTorch worker process (torch:<device> picks cpu, cuda, cuda:N)", (arg, options) =>
  TorchTrainer.start({ ...options, device: arg || options.device }),
);
