import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { buildPreTokenizer, byteToUnicodeTable } from "../../src/tokenizer/hf-pipeline.js";
import { QWEN_PATTERN, tokenizerJson } from "./fixtures.js";

/** Text from an installed dependency (TypeScript's lib .d.ts files): realistic code and prose, identical on every machine. */
export function codeCorpus(chars: number): string {
  const dir = join(import.meta.dirname, "..", "..", "node_modules", "typescript", "lib");
  const files = readdirSync(dir).filter((f) => f.endsWith(".d.ts")).sort().slice(0, 8);
  return files.map((f) => readFileSync(join(dir, f), "utf8")).join("\n").slice(0, chars);
}

/**
 * Trains a small byte-level BPE (most frequent pair first, over Qwen pre-tokens) and writes it as a Qwen-style
 * tokenizer.json: ids 0–255 bytes, then merges, then the ChatML added tokens. Deterministic.
 */
export function trainedTokenizerJson(corpus: string, numMerges: number): Record<string, unknown> {
  const pre = buildPreTokenizer({ type: "Split", pattern: { Regex: QWEN_PATTERN }, behavior: "Isolated" });
  const table = byteToUnicodeTable();
  const counts = new Map<string, number>();
  for (const p of pre.split(corpus)) {
    let m = "";
    for (const b of Buffer.from(p)) m += table[b];
    counts.set(m, (counts.get(m) ?? 0) + 1);
  }
  const words = [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, 2000)
    .map(([w, c]) => ({ syms: w.split(""), c }));
  const vocab: Record<string, number> = {};
  table.forEach((c, i) => (vocab[c] = i));
  const merges: string[] = [];
  let next = 256;
  for (let k = 0; k < numMerges; k++) {
    const pairs = new Map<string, number>();
    for (const w of words) for (let i = 0; i < w.syms.length - 1; i++) pairs.set(`${w.syms[i]} ${w.syms[i + 1]}`, (pairs.get(`${w.syms[i]} ${w.syms[i + 1]}`) ?? 0) + w.c);
    let best = "";
    let bestCount = 0;
    for (const [p, c] of pairs) if (c > bestCount || (c === bestCount && p < best)) [best, bestCount] = [p, c];
    if (!best) break;
    const [a, b] = best.split(" ") as [string, string];
    merges.push(best);
    if (vocab[a + b] === undefined) vocab[a + b] = next++;
    for (const w of words) {
      for (let i = 0; i < w.syms.length - 1; i++) if (w.syms[i] === a && w.syms[i + 1] === b) w.syms.splice(i, 2, a + b);
    }
  }
  const json = tokenizerJson() as Record<string, unknown> & { model: Record<string, unknown> };
  json.model = { ...json.model, vocab, merges };
  json.added_tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"].map((content, i) => ({
    id: next + i,
    content,
    special: i < 3,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
  }));
  return json;
}
