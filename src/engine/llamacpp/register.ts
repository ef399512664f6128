import { registerEngine } from "../registry.js";
import { formatEngineSpec } from "../spec.js";
import { llamaCppOptions } from "./options.js";

// node-llama-cpp is imported lazily so processes that never use this engine do not pay for loading it.
registerEngine("llamacpp", "llama.cpp embedded (node-llama-cpp), GGUF exported from a model dir: llamacpp:<dir>[?threads=&sequences=&ctx=&kv=&fa=&cache=]", async (spec) => {
  const parsed = llamaCppOptions(spec);
  const { LlamaCppEngine } = await import("./engine.js");
  return LlamaCppEngine.create(formatEngineSpec(spec), parsed);
});
