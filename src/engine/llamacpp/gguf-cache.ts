import { createHash } from "node:crypto";
import { existsSync, mkdirSync, realpathSync, statSync } from "node:fs";
import { join } from "node:path";
import { exportGguf } from "../../gguf/export.js";
import { modelWeightFiles } from "../../weights/safetensors.js";

/**
 * GGUF files exported from model directories, named by a key over the directory's path and its files' sizes and
 * mtimes, so restarting an engine on an unchanged directory reuses the export while every new policy version (new
 * weights) gets a fresh file.
 */
export function ggufKey(modelDir: string): string {
  const h = createHash("sha256").update(realpathSync(modelDir));
  const files = [join(modelDir, "config.json"), join(modelDir, "tokenizer.json"), ...modelWeightFiles(modelDir)];
  for (const f of files) {
    if (!existsSync(f)) continue;
    const s = statSync(f);
    h.update(`\0${f}\0${s.size}\0${s.mtimeMs}`);
  }
  return h.digest("hex").slice(0, 24);
}

export interface CachedGguf {
  file: string;
  /** Export time in ms (0 when reused). */
  exportMs: number;
}

export function ensureGguf(modelDir: string, cacheDir: string): CachedGguf {
  mkdirSync(cacheDir, { recursive: true });
  const file = join(cacheDir, `${ggufKey(modelDir)}.gguf`);
  if (existsSync(file)) return { file, exportMs: 0 };
  return { file, exportMs: exportGguf(modelDir, file).ms };
}

