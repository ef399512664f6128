import { registerEngine } from "../registry.js";
import { parseRemoteSpec } from "./options.js";
import { SglangEngine } from "./sglang.js";
import { VllmEngine } from "./vllm.js";

registerEngine("vllm", "vLLM server, token ids over /v1/completions: vllm:<url>[?model_dir=&model=&timeout_ms=&retries=&reload_url=]", (arg, options) =>
  Promise.resolve(new VllmEngine(`vllm:${arg}`, parseRemoteSpec("vllm", arg, options.modelDir))),
);
registerEngine("sglang", "SGLang server, token ids over /generate: sglang:<url>[?model_dir=&model=&timeout_ms=&retries=]", (arg, options) =>
  Promise.resolve(new SglangEngine(`sglang:${arg}`, parseRemoteSpec("sglang", arg, options.modelDir))),
);
