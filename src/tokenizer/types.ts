/** A tokenizer that maps text to the policy's token ids and back. Pure and synchronous: it runs on the proxy's hot path. */
export interface Tokenizer {
  /** Identifies the tokenizer kind, e.g. "bytes" or "hf-bpe". */
  readonly kind: string;
  readonly vocabSize: number;
  /** Special tokens (text → id), e.g. `<|im_start|>`. `encode` recognises them in text. */
  readonly specialTokens: ReadonlyMap<string, number>;
  /** Token ids that end an assistant turn (e.g. `<|im_end|>`, `<|endoftext|>`). */
  readonly stopTokenIds: readonly number[];
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  /**
   * The UTF-8 bytes a token stands for (special tokens: their text). Byte-level tokenizers implement it, so that
   * `decode(ids)` is the UTF-8 decoding of the concatenated bytes; streaming decoders and token→character spans rely
   * on it. Optional so that other tokenizers can still satisfy the interface (callers then fall back to `decode`).
   */
  tokenBytes?(id: number): Uint8Array;
  /**
   * Whether `id` stands for text (a vocabulary entry or an added token). Ids below `vocabSize` that do not are holes a
   * tokenizer.json may leave; engines never sample them (textless.ts). Absent: every id below `vocabSize` has text.
   */
  hasText?(id: number): boolean;
}
