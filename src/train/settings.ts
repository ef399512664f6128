import type { RolloutSettings } from "../rollout/run-one.js";
import type { RunConfig } from "./config.js";

/** The rollout runner's settings for a run (training, evaluation and demonstrations alike). */
export function rolloutSettings(config: RunConfig, overrides: Partial<RolloutSettings> = {}): Partial<RolloutSettings> {
  return {
    maxTurns: config.rollout.max_turns,
    maxTokens: config.sampling.max_tokens,
    harnessTimeoutMs: config.rollout.timeout_s * 1000,
    limits: { memoryBytes: config.rollout.memory_mb * 1024 * 1024, maxPids: 512, wallClockMs: 0 },
    attempts: config.rollout.attempts,
    ...overrides,
  };
}
