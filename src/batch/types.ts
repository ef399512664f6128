/**
 * The packed training batch: the one shape that crosses from TypeScript to the trainer worker.
 *
 * A batch is a list of rows. Each row holds one or more token trees packed as a flat token list with parent
 * pointers: token i attends to token j iff j is i or an ancestor of i (follow `parent`). A flat path is the special
 * case parent[i] = i - 1. The logprob of token i is read from the logits at position parent[i]; tokens with
 * parent -1 (tree roots) are never trainable. Position ids are depths along the path, so every root-to-leaf path is
 * computed exactly as if it had been run alone.
 */
export const PACKED_BATCH_VERSION = 1;

export interface PackedRow {
  /** Token ids, length N. */
  tokens: Int32Array;
  /** Index of the previous token on this token's path, or -1. Always < i (topological order). */
  parent: Int32Array;
  /** Position id = depth on the path (root token = 0). */
  positions: Int32Array;
  /** 1 where the token was sampled by the policy and should receive gradient. */
  trainable: Uint8Array;
  /** Sampling logprob recorded by the engine (0 where not trainable). */
  oldLogprobs: Float32Array;
  /** Policy version that sampled the token (-1 for context tokens). */
  policyVersion: Int32Array;
  /** Per-token advantage (filled by the advantage estimator; 0 where not trainable). */
  advantages: Float32Array;
  /** Per-token loss weight (aggregation: token-mean, sequence-mean, prompt-equal all reduce to weights). */
  lossWeights: Float32Array;
  /** 1 on action tokens (tool / sub-agent name, control tags) of sampled spans. */
  actionMask: Uint8Array;
  /** 1 on argument tokens of sampled spans. */
  argsMask: Uint8Array;
  /** Optional per-token returns for a critic (PPO). */
  returns?: Float32Array;
}

export interface PackedBatch {
  version: typeof PACKED_BATCH_VERSION;
  rows: PackedRow[];
  /** Free-form provenance (rollout ids per row, layout, statistics). */
  meta: Record<string, unknown>;
}
