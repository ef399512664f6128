import { buildBatch } from "../batch/build.js";
import type { BuiltBatch } from "../batch/batch-index.js";
import type { RolloutResult } from "../rollout/types.js";
import type { Store } from "../store/types.js";
import type { Tokenizer } from "../tokenizer/types.js";
import { buildForests } from "../trees/forest.js";

/** Tokens per packed row: one or a few rollout trees. Attention cost grows with the row, so rows stay short on CPU. */
export const ROW_TOKEN_BUDGET = 6_144;

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
