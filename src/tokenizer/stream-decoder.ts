import type { Tokenizer } from "./types.js";

/**
 * Incremental detokenizer for streaming: push sampled ids, get the text that became complete. Incomplete UTF-8
 * sequences (a character split across byte tokens) are held until the rest arrives, so the concatenation of all
 * pushes plus `flush()` equals `tokenizer.decode(allIds)`.
 */
export class StreamDecoder {
  private readonly decoder = new TextDecoder("utf-8");
  /** Fallback for tokenizers without `tokenBytes`: re-decode everything and emit the stable difference. */
  private readonly ids: number[] = [];
  private emitted = "";

  constructor(private readonly tokenizer: Tokenizer) {}

  push(ids: readonly number[] | number): string {
    const list = typeof ids === "number" ? [ids] : ids;
    const tb = this.tokenizer.tokenBytes?.bind(this.tokenizer);
    if (tb) {
      let out = "";
      for (const id of list) out += this.decoder.decode(tb(id), { stream: true });
      return out;
    }
    this.ids.push(...list);
    let text = this.tokenizer.decode(this.ids);
    // A trailing replacement character may be an incomplete sequence: hold it back until more ids arrive.
    while (text.endsWith("\uFFFD")) text = text.slice(0, -1);
    const fresh = text.startsWith(this.emitted) ? text.slice(this.emitted.length) : "";
    if (fresh) this.emitted = text;
    return fresh;
  }

  /** Ends the stream: whatever is still held becomes text (incomplete sequences as U+FFFD). */
  flush(): string {
    if (this.tokenizer.tokenBytes) return this.decoder.decode();
    const text = this.tokenizer.decode(this.ids);
    const rest = text.startsWith(this.emitted) ? text.slice(this.emitted.length) : "";
    this.emitted = text;
    return rest;
  }
}
