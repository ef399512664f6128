import { buildBatch } from "../batch/build.js";
import type { CallRecord, SessionInfo } from "../icr/records.js";
import { buildForests } from "../trees/forest.js";

/** Tree-packed vs flat token counts of one set of calls (no filtering, one big row budget so no tree is split). */
export interface DedupStats {
  calls: number;
  paths: number;
  /** Every call's prompt + completion as its own sample (no reconstruction at all). */
  perCallTokens: number;
  /** One row per root-to-leaf path: the baseline. */
  flatTokens: number;
  /** What the tree layout emits: each unique token once, identical root context shared between trees of a row. */
  treeTokens: number;
  sharedRootTokens: number;
  treeOverFlat: number;
  treeOverPerCall: number;
}

export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/**
 * `rowBudget` bounds a packed row: trees share root context only inside a row, so a budget smaller than a group's
 * trees limits sharing (the trainer's default rows are 4,096 tokens; the default here lets a whole group share).
 */
export function dedupStats(records: readonly CallRecord[], sessions: readonly SessionInfo[] = [], rowBudget = 1 << 22): DedupStats {
  const forests = buildForests(records, sessions);
  const tree = buildBatch(forests, { layout: "tree", tokenBudget: rowBudget, filter: { deadLeaves: false, maxBranches: null } });
  const perCall = records.reduce((n, c) => n + c.promptTokens.length + c.completionTokens.length, 0);
  return {
    calls: records.length,
    paths: tree.stats.paths,
    perCallTokens: perCall,
    flatTokens: tree.stats.flatTokens,
    treeTokens: tree.stats.emittedTokens,
    sharedRootTokens: tree.stats.sharedRootTokens,
    treeOverFlat: round3(tree.stats.emittedTokens / tree.stats.flatTokens),
    treeOverPerCall: round3(tree.stats.emittedTokens / perCall),
  };
}
