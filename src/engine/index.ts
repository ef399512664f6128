// Importing this module registers every built-in engine adapter. Add one side-effect import per adapter.
export { createEngine, listEngines, registerEngine } from "./registry.js";
export type { EngineFactory, EngineFactoryOptions } from "./registry.js";
export { formatEngineSpec, parseEngineSpec, type EngineSpec } from "./spec.js";
import "./scripted/register.js";
import "./llamacpp/register.js";
import "./remote/register.js";
