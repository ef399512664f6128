import type { EngineAdapter } from "../registry.js";
import { formatEngineSpec } from "../spec.js";
import { ServedEngine, servedOptions } from "./client.js";

/** The `llamacpp-http` engine adapter: the client of `harnessrl serve` (registered by src/builtins.ts). */
export const servedEngineAdapter: EngineAdapter = {
  name: "llamacpp-http",
  summary: "a llama.cpp engine shared over HTTP by `harnessrl serve`: llamacpp-http:<url>[?weights=push|path&model_dir=&timeout_ms=&retries=&token_env=&admin_token_env=&sync=0|1]",
  create: (spec, options) => ServedEngine.connect(formatEngineSpec(spec), servedOptions(spec), options.codec),
};
