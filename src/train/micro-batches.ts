import type { PackedBatch } from "../batch/types.js";

/**
 * Splits a batch's rows into micro-batches of at most `maxTokens` tokens (a row larger than that goes alone), so one
 * optimizer step can accumulate gradients over more tokens than fit in memory at once. Loss weights are global, so
 * the accumulated gradient equals the whole batch's.
 */
export function microBatches(batch: PackedBatch, maxTokens: number): PackedBatch[] {
  const out: PackedBatch[] = [];
  let rows: PackedBatch["rows"] = [];
  let tokens = 0;
  for (const row of batch.rows) {
    const n = row.tokens.length;
    if (rows.length > 0 && tokens + n > maxTokens) {
      out.push({ version: batch.version, rows, meta: batch.meta });
      rows = [];
      tokens = 0;
    }
    rows.push(row);
    tokens += n;
  }
  if (rows.length > 0) out.push({ version: batch.version, rows, meta: batch.meta });
  return out;
}

/** Number of trainable tokens in a batch. */
export function trainableTokens(batch: PackedBatch): number {
  let n = 0;
  for (const row of batch.rows) for (const t of row.trainable) n += t;
  return n;
}

/** Token-mean aggregation: every trainable token weighs 1 / (trainable tokens in the whole batch). */
export function setTokenMeanWeights(batch: PackedBatch): void {
  const n = trainableTokens(batch);
  const w = n > 0 ? 1 / n : 0;
  for (const row of batch.rows) for (let i = 0; i < row.tokens.length; i++) row.lossWeights[i] = row.trainable[i] === 1 ? w : 0;
}
