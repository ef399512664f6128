// Public surface of the tokenizers.
export type { Tokenizer } from "./types.js";
export { BYTE_SPECIAL_TOKENS, BYTE_VOCAB_SIZE, ByteTokenizer } from "./bytes.js";
export { HfBpeTokenizer, tokenizerJsonSchema } from "./hf-bpe.js";
export { loadTokenizer, readTokenizerConfig } from "./load.js";
export { StreamDecoder } from "./stream-decoder.js";
export { textlessIds } from "./textless.js";
