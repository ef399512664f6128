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

/**
 * Splits a batch's rows into `count` minibatches of about equal trainable tokens (row order kept), each taking its own
 * optimizer step. Each minibatch's loss weights are rescaled to sum to what the whole batch's did, so every step is a
 * full-size step on its share of the data (token-mean stays a token mean within the minibatch). With one minibatch the
 * batch is returned as it is.
 */
export function splitMinibatches(batch: PackedBatch, count: number): PackedBatch[] {
  if (count <= 1 || batch.rows.length <= 1) return [batch];
  const perRow = batch.rows.map((r) => r.trainable.reduce((a, t) => a + t, 0));
  const total = perRow.reduce((a, b) => a + b, 0);
  const bins: PackedBatch["rows"][] = Array.from({ length: Math.min(count, batch.rows.length) }, () => []);
  let before = 0;
  batch.rows.forEach((row, i) => {
    const bin = total > 0 ? Math.min(bins.length - 1, Math.floor((before / total) * bins.length)) : i % bins.length;
    bins[bin]!.push(row);
    before += perRow[i] as number;
  });
  const weightSum = (rows: PackedBatch["rows"]): number => rows.reduce((a, r) => a + r.lossWeights.reduce((x, w) => x + w, 0), 0);
  const whole = weightSum(batch.rows);
  return bins
    .filter((rows) => rows.length > 0)
    .map((rows) => {
      const own = weightSum(rows);
      const scale = own > 0 ? whole / own : 0;
      const scaled = rows.map((r) => ({ ...r, lossWeights: r.lossWeights.map((w) => w * scale) }));
      return { version: batch.version, rows: scaled, meta: batch.meta };
    });
}
