/**
 * The tiny CPU presets `harnessrl model init` offers. The worker (worker/harnessrl_worker/presets.py) defines their
 * shapes; this list lets the CLI validate names and print help without starting Python. A test checks both agree.
 */
export interface ModelPreset {
  name: string;
  modelType: "qwen2" | "qwen3";
  parameters: number;
  description: string;
}

export const MODEL_PRESETS: readonly ModelPreset[] = [
  { name: "tiny-1m", modelType: "qwen3", parameters: 1_018_368, description: "4 layers, hidden 128, GQA 4/2 heads, byte tokenizer, 8k context" },
  { name: "tiny-10m", modelType: "qwen3", parameters: 9_544_704, description: "6 layers, hidden 384, GQA 6/2 heads, byte tokenizer, 8k context" },
];

export function findPreset(name: string): ModelPreset | undefined {
  return MODEL_PRESETS.find((p) => p.name === name);
}
