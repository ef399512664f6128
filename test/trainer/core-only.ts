import type { Trainer } from "../../src/trainer/types.js";

/**
 * A backend that implements the core contract only, as a third-party adapter would: here a view of the real torch
 * trainer that exposes nothing but the core methods. It proves the split: the core suite passes without any
 * capability, and runs that need one fail at their start.
 */
export function coreOnly(t: Trainer): Trainer {
  return {
    info: { ...t.info, backend: "core-only", capabilities: [] },
    init: (o) => t.init(o),
    load: (d, o) => t.load(d, o),
    save: (d, o) => t.save(d, o),
    logprobs: (b, o) => t.logprobs(b, o),
    forwardBackward: (b, o) => t.forwardBackward(b, o),
    optimStep: (o) => t.optimStep(o),
    zeroGrad: () => t.zeroGrad(),
    saveCheckpoint: (d, o) => t.saveCheckpoint(d, o),
    loadCheckpoint: (d, o) => t.loadCheckpoint(d, o),
    close: () => t.close(),
  };
}
