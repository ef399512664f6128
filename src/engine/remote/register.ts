import { registerEngine } from "../registry.js";
import { formatEngineSpec } from "../spec.js";
import { remoteOptions } from "./options.js";
import { SglangEngine } from "./sglang.js";
import { VllmEngine } from "./vllm.js";

registerEngine("vllm", "vLLM server, token ids over /v1/completions: vllm:<url>[?model_dir=&model=&timeout_ms=&retries=&reload_url=]", (spec, options) =>
  Promise.resolve(new VllmEngine(formatEngineSpec(spec), { ...remoteOptions(spec), ...(options.codec ? { codec: options.codec } : {}) })),
);
registerEngine("sglang", "SGLang server, token ids over /generate: sglang:<url>[?model_dir=&model=&timeout_ms=&retries=]", (spec, options) =>
  Promise.resolve(new SglangEngine(formatEngineSpec(spec), { ...remoteOptions(spec), ...(options.codec ? { codec: options.codec } : {}) })),
);
