import type { EngineAdapter } from "../registry.js";
import { parseRemoteSpec } from "./options.js";
import { SglangEngine } from "./sglang.js";
import { VllmEngine } from "./vllm.js";

/** The `vllm` engine adapter (registered by src/builtins.ts). */
export const vllmEngineAdapter: EngineAdapter = {
  name: "vllm",
  summary: "vLLM server, token ids over /v1/completions: vllm:<url>[?model_dir=&model=&timeout_ms=&retries=&reload_url=]",
  create: (arg, options) => Promise.resolve(new VllmEngine(`vllm:${arg}`, parseRemoteSpec("vllm", arg, options.modelDir))),
};

/** The `sglang` engine adapter (registered by src/builtins.ts). */
export const sglangEngineAdapter: EngineAdapter = {
  name: "sglang",
  summary: "SGLang server, token ids over /generate: sglang:<url>[?model_dir=&model=&timeout_ms=&retries=]",
  create: (arg, options) => Promise.resolve(new SglangEngine(`sglang:${arg}`, parseRemoteSpec("sglang", arg, options.modelDir))),
};
