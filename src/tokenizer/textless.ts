import type { Tokenizer } from "./types.js";

/**
 * Ids in [0, rows) that have no text in `tokenizer`: the embedding's padded rows (a checkpoint may have more rows
 * than its tokenizer has ids: Qwen3 has 151,936 for 151,669) and holes in the tokenizer's id range. A model puts some
 * probability on them, but no engine may sample one (the proxy could not decode it), so the engines mask them and
 * the trainer leaves them out of its softmax (worker/harnessrl_worker/vocab.py reads the same rule from the model
 * directory: an id has text iff tokenizer.json names it). Ascending.
 */
export function textlessIds(tokenizer: Tokenizer, rows: number): number[] {
  const out: number[] = [];
  const limit = Math.min(rows, tokenizer.vocabSize);
  if (tokenizer.hasText) for (let id = 0; id < limit; id++) if (!tokenizer.hasText(id)) out.push(id);
  for (let id = limit; id < rows; id++) out.push(id);
  return out;
}
