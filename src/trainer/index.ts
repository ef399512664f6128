// Importing this module registers every built-in trainer adapter. Add one side-effect import per adapter.
export { createTrainer, listTrainers, registerTrainer } from "./registry.js";
import "./torch/register.js";
