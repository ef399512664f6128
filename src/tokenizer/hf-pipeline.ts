import { z } from "zod";
import { convertHfRegex } from "./hf-regex.js";

/**
 * The normalizer and pre-tokenizer parts of a Hugging Face `tokenizer.json` that byte-level BPE models (GPT-2,
 * Qwen2/Qwen3, Llama-3) use. Anything else is rejected when the file is loaded, never silently mis-tokenized.
 */

const GPT2_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

type NormalizerJson = { type: "NFC" | "NFD" | "NFKC" | "NFKD" | "Lowercase" } | { type: "Sequence"; normalizers: NormalizerJson[] };

const normalizerSchema: z.ZodType<NormalizerJson> = z.lazy(() =>
  z.union([
    z.object({ type: z.enum(["NFC", "NFD", "NFKC", "NFKD", "Lowercase"]) }),
    z.object({ type: z.literal("Sequence"), normalizers: z.array(normalizerSchema) }),
  ]),
);

type SplitBehavior = "Isolated" | "Removed" | "MergedWithPrevious" | "MergedWithNext";

type PreTokenizerJson =
  | { type: "Split"; pattern: { Regex: string } | { String: string }; behavior: SplitBehavior; invert?: boolean }
  | { type: "ByteLevel"; add_prefix_space?: boolean; use_regex?: boolean }
  | { type: "Sequence"; pretokenizers: PreTokenizerJson[] };

const preTokenizerSchema: z.ZodType<PreTokenizerJson> = z.lazy(() =>
  z.union([
    z.object({
      type: z.literal("Split"),
      pattern: z.union([z.object({ Regex: z.string() }), z.object({ String: z.string() })]),
      behavior: z.enum(["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext"]),
      invert: z.boolean().optional(),
    }),
    z.object({ type: z.literal("ByteLevel"), add_prefix_space: z.boolean().optional(), use_regex: z.boolean().optional() }),
    z.object({ type: z.literal("Sequence"), pretokenizers: z.array(preTokenizerSchema) }),
  ]),
);

export const pipelineSchemas = { normalizer: normalizerSchema, preTokenizer: preTokenizerSchema };

export type Normalize = (text: string) => string;

export function buildNormalizer(json: NormalizerJson | null | undefined): Normalize {
  if (!json) return (t) => t;
  switch (json.type) {
    case "Lowercase":
      return (t) => t.toLowerCase();
    case "Sequence": {
      const steps = json.normalizers.map(buildNormalizer);
      return (t) => steps.reduce((acc, f) => f(acc), t);
    }
    default: {
      const form = json.type;
      return (t) => t.normalize(form);
    }
  }
}

/** Splits text into pre-tokens; `byteLevel` says whether the pieces are then mapped byte → unicode before BPE. */
export interface PreTokenizer {
  split(text: string): string[];
  byteLevel: boolean;
}

export function buildPreTokenizer(json: PreTokenizerJson | null | undefined): PreTokenizer {
  const steps: ((pieces: string[]) => string[])[] = [];
  let byteLevel = false;
  const add = (p: PreTokenizerJson): void => {
    switch (p.type) {
      case "Sequence":
        p.pretokenizers.forEach(add);
        return;
      case "ByteLevel": {
        byteLevel = true;
        const prefix = p.add_prefix_space === true;
        const re = p.use_regex === false ? null : compile(GPT2_PATTERN);
        // Without a prefix space or its own regex (Qwen's case) this step only marks the byte mapping.
        if (!prefix && !re) return;
        steps.push((pieces) =>
          pieces.flatMap((piece) => {
            const s = prefix && !piece.startsWith(" ") ? " " + piece : piece;
            return re ? splitByRegex(s, re, "Isolated", false) : [s];
          }),
        );
        return;
      }
      case "Split": {
        const re = "Regex" in p.pattern ? compile(convertHfRegex(p.pattern.Regex)) : compile(escapeRegex(p.pattern.String));
        const behavior = p.behavior;
        const invert = p.invert === true;
        steps.push((pieces) => pieces.flatMap((piece) => splitByRegex(piece, re, behavior, invert)));
        return;
      }
    }
  };
  if (json) add(json);
  return {
    byteLevel,
    split: (text) => {
      let pieces = [text];
      for (const step of steps) pieces = step(pieces);
      return pieces.filter((p) => p.length > 0);
    },
  };
}

function compile(source: string): RegExp {
  return new RegExp(source, "gu");
}

export function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** Split semantics of the `tokenizers` crate (`SplitDelimiterBehavior`). */
function splitByRegex(text: string, re: RegExp, behavior: SplitBehavior, invert: boolean): string[] {
  // Isolated keeps every run, so `invert` makes no difference to it.
  if (behavior === "Isolated") return splitIsolated(text, re);
  // Alternating runs: [isMatch, start, end].
  const runs: [boolean, number, number][] = [];
  let last = 0;
  re.lastIndex = 0;
  for (const m of text.matchAll(re)) {
    const start = m.index;
    const end = start + m[0].length;
    if (end === start) continue;
    if (start > last) runs.push([false, last, start]);
    runs.push([true, start, end]);
    last = end;
  }
  if (last < text.length) runs.push([false, last, text.length]);
  if (invert) for (const r of runs) r[0] = !r[0];
  const out: string[] = [];
  switch (behavior) {
    case "Removed":
      for (const [isMatch, s, e] of runs) if (!isMatch) out.push(text.slice(s, e));
      break;
    case "MergedWithPrevious": {
      let cur = "";
      for (const [isMatch, s, e] of runs) {
        cur += text.slice(s, e);
        if (isMatch) {
          out.push(cur);
          cur = "";
        }
      }
      if (cur) out.push(cur);
      break;
    }
    case "MergedWithNext": {
      let cur = "";
      for (const [isMatch, s, e] of runs) {
        if (isMatch && cur) {
          out.push(cur);
          cur = "";
        }
        cur += text.slice(s, e);
      }
      if (cur) out.push(cur);
      break;
    }
  }
  return out;
}

/** The common case, without intermediate arrays: matches and the gaps between them, in order. */
function splitIsolated(text: string, re: RegExp): string[] {
  const out: string[] = [];
  let last = 0;
  re.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    const start = m.index;
    const len = m[0].length;
    if (len === 0) {
      re.lastIndex++;
      continue;
    }
    if (start > last) out.push(text.slice(last, start));
    out.push(m[0]);
    last = start + len;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** GPT-2's reversible byte → printable-character map used by ByteLevel pre-tokenizers and decoders. */
export function byteToUnicodeTable(): string[] {
  const table: string[] = new Array<string>(256);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    table[b] = String.fromCharCode(printable ? b : 256 + n++);
  }
  return table;
}
