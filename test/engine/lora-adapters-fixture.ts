import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** A policy version directory as the torch worker writes it with `model.lora`: `adapter/` in the PEFT layout. */
export function adapterVersionDir(root: string, name: string): string {
  const dir = join(root, name);
  mkdirSync(join(dir, "adapter"), { recursive: true });
  writeFileSync(join(dir, "adapter", "adapter_config.json"), JSON.stringify({ peft_type: "LORA", r: 4, lora_alpha: 8, target_modules: ["q_proj"], base_model_name_or_path: join(root, "model") }));
  writeFileSync(join(dir, "adapter", "adapter_model.safetensors"), "");
  return dir;
}
