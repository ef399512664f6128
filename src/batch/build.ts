import { UserError } from "../core/errors.js";
import type { BreakKind } from "../icr/records.js";
import type { FilterOptions, KeptForest } from "../trees/filter.js";
import { filterForests } from "../trees/filter.js";
import { completionMasks, recordedSpans } from "../trees/masks.js";
import { treePaths } from "../trees/paths.js";
import type { BranchLabel, RolloutForest, SessionTree, TreeNode } from "../trees/types.js";
import { TOKEN_ROLES } from "../trees/types.js";
import type { BatchStats, BuiltBatch, CallRef, PathInfo } from "./batch-index.js";
import type { LayoutResult, TreeUnitInput } from "./layouts.js";
import { flatLayout, treeLayout } from "./layouts.js";
import type { CallData } from "./row-writer.js";
import { PACKED_BATCH_VERSION } from "./types.js";

export type BatchLayout = "flat" | "tree";

/** Outcome reward per rollout id (0 where none). */
export type OutcomeRewards = ReadonlyMap<string, number> | Readonly<Record<string, number>>;

function outcomeFor(outcome: OutcomeRewards | undefined, rolloutId: string): number {
  if (!outcome) return 0;
  if (outcome instanceof Map) return (outcome as ReadonlyMap<string, number>).get(rolloutId) ?? 0;
  return (outcome as Readonly<Record<string, number>>)[rolloutId] ?? 0;
}

export interface BatchOptions {
  layout: BatchLayout;
  /** Tokens per row for the tree layout (and the oversize threshold for flat rows). */
  tokenBudget: number;
  /** Each path's outcome reward (advantage estimators read it from PathInfo). */
  outcome?: OutcomeRewards;
  filter?: Partial<FilterOptions>;
  /** Tree layout: trees in one row share identical root context (a GRPO group's system prompt + task). Default true. */
  shareRootPrefixes?: boolean;
}

export const DEFAULT_TOKEN_BUDGET = 16_384;

/**
 * Filters the forests, then builds the batch. Masks and validity come from the spans the proxy recorded: the batch
 * path never decodes, re-tokenizes or re-parses. Records without spans (ICR schema 1) are refused up front.
 */
export function buildBatch(forests: readonly RolloutForest[], options: Partial<BatchOptions> = {}): BuiltBatch {
  for (const f of forests) for (const t of f.trees) for (const c of t.calls) recordedSpans(c.record);
  const { kept, stats } = filterForests(forests, { ...options.filter });
  return buildFromKept(kept, stats, options);
}

export function buildFromKept(kept: readonly KeptForest[], filterStats: BatchStats["filter"], options: Partial<BatchOptions> = {}): BuiltBatch {
  const layout = options.layout ?? "tree";
  const budget = options.tokenBudget ?? DEFAULT_TOKEN_BUDGET;
  if (!Number.isInteger(budget) || budget < 1) throw new UserError("invalid_batch_options", `tokenBudget must be a positive integer, got ${budget}`);

  const calls: CallRef[] = [];
  const callData = new Map<string, CallData>();
  const rolloutOf = new Map<SessionTree, string>();
  for (const k of kept) for (const t of k.forest.trees) rolloutOf.set(t, k.forest.rolloutId);

  const lookup = (tree: SessionTree, callId: string): CallData => {
    let d = callData.get(callId);
    if (d) return d;
    const record = tree.calls[tree.callIndex.get(callId) as number]?.record;
    if (!record) throw new UserError("unknown_call", `call ${callId} is not in session ${tree.sessionId}`);
    const masks = record.completionTokens.length > 0 ? completionMasks(record) : null;
    d = { ref: calls.length, record, action: masks?.action ?? null, args: masks?.args ?? null };
    calls.push({ callId, sessionId: record.sessionId, rolloutId: rolloutOf.get(tree) ?? "", policyVersion: record.policyVersion });
    callData.set(callId, d);
    return d;
  };

  const inputs: TreeUnitInput[] = [];
  const paths: PathInfo[] = [];
  const stats: BatchStats = {
    layout,
    rollouts: kept.length,
    sessions: 0,
    calls: 0,
    segments: 0,
    rows: 0,
    paths: 0,
    flatTokens: 0,
    uniqueTokens: 0,
    emittedTokens: 0,
    dedupRatio: 1,
    trainableTokens: 0,
    trainableByPolicyVersion: {},
    oversizePaths: 0,
    sharedRootTokens: 0,
    breaks: {},
    labels: {},
    parentDisagreements: 0,
    filter: filterStats,
  };
  for (const k of kept) {
    const outcome = outcomeFor(options.outcome, k.forest.rolloutId);
    for (const [tree, set] of k.kept) {
      stats.sessions++;
      stats.calls += set.size;
      stats.parentDisagreements += tree.disagreements.filter((d) => set.has(tree.callIndex.get(d.callId) as number)).length;
      const segs = new Set<number>();
      for (const ci of set) {
        const c = tree.calls[ci];
        if (!c) continue;
        segs.add(c.segment);
        const kind: BreakKind | undefined = c.record.break?.kind;
        if (kind) stats.breaks[kind] = (stats.breaks[kind] ?? 0) + 1;
        stats.labels[c.label] = (stats.labels[c.label] ?? 0) + 1;
      }
      stats.segments += segs.size;
      const tps = treePaths(tree, set);
      const unitPaths: TreeUnitInput["paths"] = [];
      const counted = new Set<number>();
      for (const p of tps) {
        const label: BranchLabel = tree.segments[p.leafCall.segment]?.label ?? "main";
        const info: PathInfo = {
          id: paths.length,
          rolloutId: k.forest.rolloutId,
          sessionId: tree.sessionId,
          leafCallId: p.leafCall.callId,
          callIds: p.calls.map((c) => c.callId),
          label,
          row: -1,
          leafToken: -1,
          length: p.length,
          trainableTokens: 0,
          outcomeReward: outcome,
        };
        paths.push(info);
        unitPaths.push({ path: p, info });
        stats.flatTokens += p.length;
        for (const id of p.nodes) {
          if (counted.has(id)) continue;
          counted.add(id);
          const n = tree.nodes[id] as TreeNode;
          stats.uniqueTokens += n.end - n.start;
        }
      }
      inputs.push({ tree, paths: unitPaths });
    }
  }
  const result: LayoutResult = layout === "flat" ? flatLayout(inputs, lookup, budget) : treeLayout(inputs, lookup, budget, options.shareRootPrefixes ?? true);
  stats.sharedRootTokens = result.sharedRootTokens;
  stats.rows = result.rows.length;
  stats.paths = paths.length;
  stats.oversizePaths = result.oversizePaths;
  stats.emittedTokens = result.rows.reduce((n, r) => n + r.tokens.length, 0);
  stats.dedupRatio = stats.flatTokens === 0 ? 1 : stats.uniqueTokens / stats.flatTokens;
  // Unique trainable tokens, independent of the layout (a flat batch repeats shared ones).
  const trainable = countUniqueTrainable(result);
  stats.trainableTokens = trainable.count;
  stats.trainableByPolicyVersion = trainable.byVersion;

  return {
    batch: {
      version: PACKED_BATCH_VERSION,
      rows: result.rows,
      meta: { layout, tokenBudget: budget, rowRollouts: rowRollouts(result, calls), stats },
    },
    index: { layout, paths, calls, rows: result.index, roles: TOKEN_ROLES },
    stats,
  };
}

/**
 * Trainable tokens counted once each (a sampled token is identified by (call, completion offset)), in total and per
 * policy version (asynchronous training mixes versions; the staleness bound is checked against this).
 */
function countUniqueTrainable(result: LayoutResult): { count: number; byVersion: Record<string, number> } {
  const seen = new Map<number, Uint8Array>();
  const byVersion: Record<string, number> = {};
  let count = 0;
  result.rows.forEach((r, ri) => {
    const ix = result.index[ri];
    if (!ix) return;
    for (let i = 0; i < r.tokens.length; i++) {
      if (r.trainable[i] !== 1) continue;
      const call = ix.call[i] as number;
      const off = ix.offset[i] as number;
      let bits = seen.get(call);
      if (!bits) {
        bits = new Uint8Array(off + 1024);
        seen.set(call, bits);
      } else if (off >= bits.length) {
        const next = new Uint8Array(Math.max(off + 1, bits.length * 2));
        next.set(bits);
        bits = next;
        seen.set(call, bits);
      }
      if (bits[off] === 0) {
        bits[off] = 1;
        count++;
        const v = String(r.policyVersion[i]);
        byVersion[v] = (byVersion[v] ?? 0) + 1;
      }
    }
  });
  return { count, byVersion };
}

function rowRollouts(result: LayoutResult, calls: readonly CallRef[]): string[][] {
  return result.index.map((ix) => {
    const refs = new Set<number>();
    for (const c of ix.call) if (c >= 0) refs.add(c);
    return [...new Set([...refs].map((c) => calls[c]?.rolloutId ?? ""))];
  });
}
