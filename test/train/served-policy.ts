import { join } from "node:path";
import { LlamaCppEngine } from "../../src/engine/llamacpp/engine.js";
import { llamaCppOptions } from "../../src/engine/llamacpp/options.js";
import { EngineService } from "../../src/engine/service/server.js";
import { parseEngineSpec } from "../../src/engine/spec.js";
import { TorchTrainer } from "../../src/trainer/torch/torch-trainer.js";

export interface ServedPolicy {
  /** The tiny-1m model directory the service starts on (policy v0). */
  start: string;
  engine: LlamaCppEngine;
  service: EngineService;
  url: string;
}

/**
 * A tiny-1m policy made by the torch worker under `root`, served in process by `harnessrl serve`'s EngineService on
 * a loopback port with the given bearer tokens (generation and admin). The caller closes service and engine.
 */
export async function startServedPolicy(root: string, tokens: { token: string; adminToken: string }): Promise<ServedPolicy> {
  const start = join(root, "start");
  const trainer = await TorchTrainer.start({ threads: 1 });
  try {
    await trainer.init({ preset: "tiny-1m", seed: 3, out: start });
  } finally {
    await trainer.close();
  }
  const spec = `llamacpp:${start}?threads=1&sequences=4&ctx=2048&cache=${join(root, "cache")}`;
  const engine = await LlamaCppEngine.create(spec, llamaCppOptions(parseEngineSpec(spec)));
  const service = new EngineService({ engine, modelDir: start, ...tokens, uploadDir: join(root, "uploads") });
  const url = await service.listen(0, "127.0.0.1");
  return { start, engine, service, url };
}
