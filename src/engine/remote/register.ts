import type { EngineAdapter } from "../registry.js";
import { formatEngineSpec } from "../spec.js";
import { remoteOptions } from "./options.js";
import { SglangEngine } from "./sglang.js";
import { VllmEngine } from "./vllm.js";

/** The `vllm` engine adapter (registered by src/builtins.ts). */
export const vllmEngineAdapter: EngineAdapter = {
  name: "vllm",
  summary: "vLLM server, token ids over /v1/completions: vllm:<url>[?model_dir=&model=&timeout_ms=&retries=&reload_url=]",
  create: (spec, options) => Promise.resolve(new VllmEngine(formatEngineSpec(spec), { ...remoteOptions(spec), ...(options.codec ? { codec: options.codec } : {}) })),
};

/** The `sglang` engine adapter (registered by src/builtins.ts). */
export const sglangEngineAdapter: EngineAdapter = {
  name: "sglang",
  summary: "SGLang server, token ids over /generate: sglang:<url>[?model_dir=&model=&timeout_ms=&retries=]",
  create: (spec, options) => Promise.resolve(new SglangEngine(formatEngineSpec(spec), { ...remoteOptions(spec), ...(options.codec ? { codec: options.codec } : {}) })),
};
