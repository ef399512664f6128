// Public surface of trajectory reconstruction (docs/trees.md).
export type { BranchLabel, ContextKind, InsertedSpan, ParentDisagreement, RolloutForest, Segment, SessionTree, SpawnLink, TokenRole, TreeCall, TreeNode } from "./types.js";
export { BRANCH_LABELS, TOKEN_ROLES } from "./types.js";
export { buildSessionTree } from "./session-tree.js";
export { buildForests, callIdResolver, forestsFromStore, rolloutKey } from "./forest.js";
export { DEFAULT_FILTER, filterForests, isValidCall } from "./filter.js";
export type { FilterOptions, FilterStats, KeptForest } from "./filter.js";
export { treePaths, pathTokens } from "./paths.js";
export type { TreePath } from "./paths.js";
export { completionMasks, recordedSpans } from "./masks.js";
export type { CompletionMasks } from "./masks.js";
export { rolloutDecisions } from "./decisions.js";
export type { Decision } from "./decisions.js";
export { viewForest, viewSession } from "./view.js";
export type { ForestView, SessionView } from "./view.js";
export { renderForest } from "./render-text.js";
