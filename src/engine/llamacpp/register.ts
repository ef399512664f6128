import type { EngineAdapter } from "../registry.js";
import { formatEngineSpec } from "../spec.js";
import { llamaCppOptions } from "./options.js";

/** The `llamacpp` engine adapter (registered by src/builtins.ts). */
export const llamacppEngineAdapter: EngineAdapter = {
  name: "llamacpp",
  summary: "llama.cpp embedded (node-llama-cpp), GGUF exported from a model dir: llamacpp:<dir>[?threads=&sequences=&ctx=&kv=&fa=&cache=]",
  // node-llama-cpp is imported lazily so processes that never use this engine do not pay for loading it.
  create: async (spec) => {
    const parsed = llamaCppOptions(spec);
    const { LlamaCppEngine } = await import("./engine.js");
    return LlamaCppEngine.create(formatEngineSpec(spec), parsed);
  },
};
