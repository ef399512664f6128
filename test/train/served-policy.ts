import { join } from "node:path";
import { LlamaCppEngine } from "../../src/engine/llamacpp/engine.js";
import { llamaCppOptions } from "../../src/engine/llamacpp/options.js";
import { EngineService } from "../../src/engine/service/server.js";
import { parseEngineSpec } from "../../src/engine/spec.js";
import { TorchTrainer } from "../../src/trainer/torch/torch-trainer.js";

export interface ServedModel {
  engine: LlamaCppEngine;
  service: EngineService;
  url: string;
}

export interface ServedPolicy extends ServedModel {
  /** The tiny-1m model directory the service starts on (policy v0). */
  start: string;
}

/**
 * `modelDir` served in process by `harnessrl serve`'s EngineService on a loopback port with the given bearer tokens
 * (generation and admin); its engine cache and pushed versions go under `dir`. The caller closes service and engine.
 */
export async function serveModel(modelDir: string, dir: string, tokens: { token: string; adminToken: string }): Promise<ServedModel> {
  const spec = `llamacpp:${modelDir}?threads=1&sequences=4&ctx=2048&cache=${join(dir, "cache")}`;
  const engine = await LlamaCppEngine.create(spec, llamaCppOptions(parseEngineSpec(spec)));
  const service = new EngineService({ engine, modelDir, ...tokens, uploadDir: join(dir, "uploads") });
  const url = await service.listen(0, "127.0.0.1");
  return { engine, service, url };
}

/** A tiny-1m policy (untrained: near-uniform tokens) made by the torch worker in `dir`. */
export async function initTinyPolicy(dir: string, seed = 3): Promise<void> {
  const trainer = await TorchTrainer.start({ threads: 1 });
  try {
    await trainer.init({ preset: "tiny-1m", seed, out: dir });
  } finally {
    await trainer.close();
  }
}

/** A tiny-1m policy made by the torch worker under `root` (`<root>/start`), served as {@link serveModel} does. */
export async function startServedPolicy(root: string, tokens: { token: string; adminToken: string }): Promise<ServedPolicy> {
  const start = join(root, "start");
  await initTinyPolicy(start);
  return { start, ...(await serveModel(start, root, tokens)) };
}
