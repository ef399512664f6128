// The engine layer's registry. Adapters do not register themselves: src/builtins.ts registers the built-in ones.
export { createEngine, engines, listEngines, registerEngine } from "./registry.js";
export type { EngineAdapter, EngineFactory, EngineFactoryOptions } from "./registry.js";
export { formatEngineSpec, parseEngineSpec, type EngineSpec } from "./spec.js";
