import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";
import { EngineError } from "../../core/errors.js";

let shared: Promise<Llama> | undefined;

/** One llama.cpp runtime per process (CPU build; never compiles from source at run time). */
export function llamaRuntime(): Promise<Llama> {
  shared ??= getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error }).catch((e: unknown) => {
    shared = undefined;
    throw new EngineError("llamacpp_unavailable", `cannot load the llama.cpp runtime (node-llama-cpp): ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  });
  return shared;
}
