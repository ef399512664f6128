/**
 * The tiny CPU presets `harnessrl model init` offers. The worker (worker/harnessrl_worker/presets.py) defines their
 * shapes; this list lets the CLI validate names and print help without starting Python. A test checks both agree.
 */
export interface ModelPreset {
  name: string;
  modelType: "qwen2" | "qwen3";
  parameters: number;
  /** "bytes": the 265-id byte tokenizer; "qwen3": Qwen3's tokenizer.json / tokenizer_config.json (official template). */
  tokenizer: "bytes" | "qwen3";
  description: string;
}

export const MODEL_PRESETS: readonly ModelPreset[] = [
  { name: "tiny-1m", modelType: "qwen3", parameters: 1_018_368, tokenizer: "bytes", description: "4 layers, hidden 128, GQA 4/2 heads, byte tokenizer, 8k context" },
  { name: "tiny-10m", modelType: "qwen3", parameters: 9_544_704, tokenizer: "bytes", description: "6 layers, hidden 384, GQA 6/2 heads, byte tokenizer, 8k context" },
  // Qwen3's vocabulary (embedding padded to 151,936 rows as in Qwen3's config), special tokens and official template;
  // the tied embedding is almost all of the parameters.
  { name: "qwen3-tiny", modelType: "qwen3", parameters: 9_871_808, tokenizer: "qwen3", description: "2 layers, hidden 64, GQA 4/2 heads of 32, Qwen3 tokenizer + template, 40k context" },
  { name: "qwen3-20m", modelType: "qwen3", parameters: 20_432_256, tokenizer: "qwen3", description: "4 layers, hidden 128, GQA 4/2 heads of 32, Qwen3 tokenizer + template, 40k context" },
];

export function findPreset(name: string): ModelPreset | undefined {
  return MODEL_PRESETS.find((p) => p.name === name);
}
