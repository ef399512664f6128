import { buildBatch } from "../batch/build.js";
import type { BuiltBatch } from "../batch/batch-index.js";
import type { CallRecord, SessionInfo } from "../icr/records.js";
import type { RolloutResult } from "../tasks/rollout-result.js";
import type { Store } from "../store/types.js";
import { buildForests } from "../trees/forest.js";

/**
 * Tokens per packed row. The worker attends along tree paths (worker/harnessrl_worker/segments.py), so a row's cost
 * grows with its unique tokens and path lengths, not with the row length squared: rows of several rollouts share
 * their system prompt (and a GRPO group its task prompt) once. tiny-1m forward+backward of 8 rollouts with a shared
 * 600-token prompt and 420-token continuations: 4.9 s as 8 dense-mask flat rows, 3.4 s as flat rows with segment
 * attention, 2.3 s as one tree-packed row (one CPU thread). Larger rows add little sharing and coarsen SFT batches.
 * The default for `algorithm.row_tokens`; long real-harness prompts need larger rows to share.
 */
export const ROW_TOKEN_BUDGET = 4_096;

/**
 * The trees of the given rollouts (every session of each, sub-agents included), packed into a training batch with
 * the verifier score as each rollout's outcome reward. Infrastructure failures never reach here.
 */
export function batchForRollouts(store: Store, results: readonly RolloutResult[], options: { trajectories?: "main" | "all"; rowTokens?: number } = {}): BuiltBatch {
  return batchFromRecords(recordsForRollouts(store, results), results, options);
}

/** The recorded calls and sessions of the given rollouts, as a batch is built from them. */
export interface RolloutRecords {
  records: CallRecord[];
  sessions: SessionInfo[];
}

export function recordsForRollouts(store: Store, results: readonly RolloutResult[]): RolloutRecords {
  // Per rollout: reading every session of the store and filtering made each step's batch cost grow with the run.
  // Only the result's own sessions: an attempt that ended in an infrastructure error and was run again recorded
  // under the same rollout id (src/rollout/run-one.ts), and its calls are not this outcome's.
  const records: CallRecord[] = [];
  const sessions: SessionInfo[] = [];
  for (const r of results) {
    const own = new Set(r.sessionIds);
    for (const c of store.listCalls({ rolloutId: r.rolloutId })) if (own.has(c.sessionId)) records.push(c);
    for (const s of store.listSessions({ rolloutId: r.rolloutId })) if (own.has(s.sessionId)) sessions.push(s);
  }
  return { records, sessions };
}

/** batchForRollouts on records already read (a step that also reads them for something else reads them once). */
export function batchFromRecords(read: RolloutRecords, results: readonly RolloutResult[], options: { trajectories?: "main" | "all"; rowTokens?: number } = {}): BuiltBatch {
  const forests = buildForests(read.records, read.sessions);
  const outcome = new Map(results.map((r) => [r.rolloutId, r.score]));
  return buildBatch(forests, {
    layout: "tree",
    tokenBudget: options.rowTokens ?? ROW_TOKEN_BUDGET,
    outcome,
    filter: { trajectories: options.trajectories ?? "all" },
  });
}
