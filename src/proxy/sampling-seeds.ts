import { createHash } from "node:crypto";

/**
 * Common random numbers for evaluations. Two evaluations of a plan (before and after RL) that give each rollout
 * (task, harness, sample) the same sampling seeds draw the same random numbers: where the two policies agree, the
 * engines sample the same tokens (llama.cpp and vLLM sample by inverse CDF from a seeded generator), so a rollout's
 * outcome changes only where the policy changed. The paired difference then carries less sampling noise, while each
 * evaluation on its own is still an ordinary sample of pass@1 (every rollout's seeds differ from every other's).
 */

function uint32(parts: readonly (string | number)[]): number {
  return createHash("sha256").update(JSON.stringify(parts)).digest().readUInt32BE(0);
}

/** The base seed of one rollout of a plan whose seeds are keyed by `key` (the same in every evaluation of the plan). */
export function rolloutSamplingSeed(key: string, taskId: string, harness: string, sample: number): number {
  return uint32(["rollout", key, taskId, harness, sample]);
}

/** The seed of a session's `index`-th model call (0-based), from the session's base seed. */
export function callSamplingSeed(base: number, index: number): number {
  return uint32(["call", base, index]);
}

/** A sub-agent's base seed, from its parent session's and the sub-agent's id. */
export function childSamplingSeed(parentBase: number, agentId: string): number {
  return uint32(["child", parentBase, agentId]);
}
