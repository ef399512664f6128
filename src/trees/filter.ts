import type { CallRecord } from "../icr/records.js";
import { recordedSpans } from "./masks.js";
import { treePaths } from "./paths.js";
import type { BranchLabel, RolloutForest, SessionTree, TreeCall } from "./types.js";

export interface FilterOptions {
  /** Within a segment, among retries of the same prompt keep only the branch with the longest valid continuation. */
  deadLeaves: boolean;
  /** Drop a rollout whose kept trees have more root-to-leaf paths than this (null: no limit). */
  maxBranches: number | null;
  /**
   * `main`: drop segments whose label or lineage is in `auxiliaryLabels` (a rewrite of a side conversation is still
   * side); `all`: train every trajectory.
   */
  trajectories: "main" | "all";
  auxiliaryLabels: BranchLabel[];
  /** Whether a leaf call ended validly; the default is `isValidCall`. */
  isValid?: (record: CallRecord) => boolean;
}

export const DEFAULT_FILTER: FilterOptions = {
  deadLeaves: true,
  maxBranches: 64,
  trajectories: "all",
  auxiliaryLabels: ["sub-agent", "side", "compaction"],
};

/**
 * A call ended validly when it succeeded, stopped on its own (not truncated or aborted) and wrote no malformed tool call
 * (as the proxy's parser recorded; a record without spans is refused, see `recordedSpans`).
 */
export function isValidCall(record: CallRecord): boolean {
  return record.status === "ok" && record.finishReason === "stop" && recordedSpans(record).malformed === 0;
}

export interface FilterStats {
  rolloutsIn: number;
  rolloutsKept: number;
  overBranchingRollouts: number;
  callsIn: number;
  callsKept: number;
  deadLeafCalls: number;
  deadLeafBranches: number;
  auxiliaryCalls: number;
}

/** A forest with the calls that survived filtering (per tree, indices into `tree.calls`). */
export interface KeptForest {
  forest: RolloutForest;
  kept: Map<SessionTree, Set<number>>;
}

interface Score {
  valid: number;
  calls: number;
  tokens: number;
}

function better(a: Score, b: Score): boolean {
  if (a.valid !== b.valid) return a.valid > b.valid;
  if (a.calls !== b.calls) return a.calls > b.calls;
  return a.tokens > b.tokens;
}

/** Calls dropped as dead branches: for every retry group, all members but the best one, with their in-segment subtrees. */
function deadLeafDrops(tree: SessionTree, isValid: (r: CallRecord) => boolean): { calls: Set<number>; branches: number } {
  const children = new Map<number, number[]>();
  for (const c of tree.calls) {
    if (c.treeParent === null) continue;
    const p = tree.callIndex.get(c.treeParent);
    if (p === undefined || (tree.calls[p] as TreeCall).segment !== c.segment) continue;
    const list = children.get(p);
    if (list) list.push(c.index);
    else children.set(p, [c.index]);
  }
  // Children are always recorded after their parent, so one backward pass scores every subtree (no recursion).
  const scores: Score[] = new Array<Score>(tree.calls.length);
  for (let i = tree.calls.length - 1; i >= 0; i--) {
    const c = tree.calls[i] as TreeCall;
    const kids = children.get(i) ?? [];
    // A leaf scores itself; an inner call scores its best leaf (the continuation is what makes a branch live).
    let s: Score | null = kids.length === 0 ? { valid: isValid(c.record) ? 1 : 0, calls: 1, tokens: c.record.promptTokens.length + c.record.completionTokens.length } : null;
    for (const k of kids) {
      const ks = scores[k] as Score;
      const cand = { valid: ks.valid, calls: ks.calls + 1, tokens: ks.tokens };
      if (s === null || better(cand, s)) s = cand;
    }
    scores[i] = s as Score;
  }
  const best = (i: number): Score => scores[i] as Score;
  const groups = new Map<number, number[]>();
  for (const c of tree.calls) {
    if (c.retryOf === null) continue;
    const root = tree.callIndex.get(c.retryOf) as number;
    const g = groups.get(root);
    if (g) g.push(c.index);
    else groups.set(root, [root, c.index]);
  }
  const dropped = new Set<number>();
  let branches = 0;
  for (const members of groups.values()) {
    let keep = members[0] as number;
    for (const m of members) if (better(best(m), best(keep))) keep = m;
    for (const m of members) {
      if (m === keep) continue;
      branches++;
      const stack = [m];
      while (stack.length > 0) {
        const i = stack.pop() as number;
        dropped.add(i);
        stack.push(...(children.get(i) ?? []));
      }
    }
  }
  return { calls: dropped, branches };
}

function isAuxiliary(tree: SessionTree, call: TreeCall, aux: ReadonlySet<BranchLabel>): boolean {
  const segment = tree.segments[call.segment];
  return segment !== undefined && (aux.has(segment.label) || aux.has(segment.lineage));
}

/** Applies the configured filters to each rollout; every decision is counted in the returned statistics. */
export function filterForests(forests: readonly RolloutForest[], options: Partial<FilterOptions> = {}): { kept: KeptForest[]; stats: FilterStats } {
  const opts: FilterOptions = { ...DEFAULT_FILTER, ...options };
  const isValid = opts.isValid ?? isValidCall;
  const aux = new Set(opts.auxiliaryLabels);
  const stats: FilterStats = { rolloutsIn: forests.length, rolloutsKept: 0, overBranchingRollouts: 0, callsIn: 0, callsKept: 0, deadLeafCalls: 0, deadLeafBranches: 0, auxiliaryCalls: 0 };
  const kept: KeptForest[] = [];
  for (const forest of forests) {
    const keptByTree = new Map<SessionTree, Set<number>>();
    let branches = 0;
    let callsKept = 0;
    let deadCalls = 0;
    let deadBranches = 0;
    let auxCalls = 0;
    for (const tree of forest.trees) {
      stats.callsIn += tree.calls.length;
      const dead = opts.deadLeaves ? deadLeafDrops(tree, isValid) : { calls: new Set<number>(), branches: 0 };
      deadBranches += dead.branches;
      const set = new Set<number>();
      for (const c of tree.calls) {
        if (dead.calls.has(c.index)) deadCalls++;
        else if (opts.trajectories === "main" && isAuxiliary(tree, c, aux)) auxCalls++;
        else set.add(c.index);
      }
      if (set.size === 0) continue;
      keptByTree.set(tree, set);
      callsKept += set.size;
      branches += treePaths(tree, set).length;
    }
    stats.deadLeafCalls += deadCalls;
    stats.deadLeafBranches += deadBranches;
    stats.auxiliaryCalls += auxCalls;
    if (opts.maxBranches !== null && branches > opts.maxBranches) {
      stats.overBranchingRollouts++;
      continue;
    }
    if (keptByTree.size === 0) continue;
    stats.rolloutsKept++;
    stats.callsKept += callsKept;
    kept.push({ forest, kept: keptByTree });
  }
  return { kept, stats };
}
