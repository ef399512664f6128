import { buildBatch } from "../batch/build.js";
import type { BuiltBatch } from "../batch/batch-index.js";
import type { RolloutResult } from "../rollout/types.js";
import type { Store } from "../store/types.js";
import type { Tokenizer } from "../tokenizer/types.js";
import { buildForests } from "../trees/forest.js";

/**
 * Tokens per packed row. Attention is dense within a row, so its cost per token grows with the row: on tiny-1m (CPU,
 * 2 threads) SFT over the same 24 demonstration trees ran at 411 trainable tokens/s with 1,024-token rows, 253 with
 * 2,048 and 135 with 6,144 (where trees share their system prompt). Short rows win despite repeating the prompt.
 */
export const ROW_TOKEN_BUDGET = 1_024;

/**
 * The trees of the given rollouts (every session of each, sub-agents included), packed into a training batch with
 * the verifier score as each rollout's outcome reward. Infrastructure failures never reach here.
 */
export function batchForRollouts(store: Store, results: readonly RolloutResult[], tokenizer: Tokenizer, options: { trajectories?: "main" | "all" } = {}): BuiltBatch {
  const ids = new Set(results.map((r) => r.rolloutId));
  const records = results.flatMap((r) => store.listCalls({ rolloutId: r.rolloutId }));
  const sessions = store.listSessions().filter((s) => s.rolloutId !== null && ids.has(s.rolloutId));
  const forests = buildForests(records, sessions);
  const outcome = new Map(results.map((r) => [r.rolloutId, r.score]));
  return buildBatch(forests, {
    layout: "tree",
    tokenBudget: ROW_TOKEN_BUDGET,
    tokenizer,
    rewards: { outcome },
    filter: { trajectories: options.trajectories ?? "all" },
  });
}
