// Public surface of training-batch building (docs/trees.md §5).
export type { PackedBatch, PackedRow } from "./types.js";
export { PACKED_BATCH_VERSION } from "./types.js";
export { buildBatch, buildFromKept, DEFAULT_TOKEN_BUDGET } from "./build.js";
export type { BatchLayout, BatchOptions, OutcomeRewards } from "./build.js";
export type { BatchIndex, BatchStats, BuiltBatch, CallRef, PathInfo, RowIndex } from "./batch-index.js";
export { fillAdvantages } from "./advantage-slots.js";
export type { AdvantageSlot } from "./advantage-slots.js";
