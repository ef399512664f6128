import { hashString, type Rng } from "./prng.js";
import type { Split } from "./task.js";
import { InfraError } from "../core/errors.js";

/**
 * Entity hold-out. Every entity (a generated name, a file-name word, an arithmetic operand) belongs to exactly one
 * split, decided by a hash of its text alone, so train and test are disjoint whatever seeds or counts are used.
 * About a quarter of the space goes to test.
 */
export function splitOf(kind: string, text: string): Split {
  return hashString(`${kind}:${text}`) % 4 === 0 ? "test" : "train";
}

/** Draws values from `gen` until one belongs to `split` and is not in `taken` (which it is then added to). */
export function drawFor<T>(rng: Rng, split: Split, kind: string, taken: Set<string>, gen: (rng: Rng) => T, key: (v: T) => string = String): T {
  for (let attempt = 0; attempt < 10_000; attempt++) {
    const v = gen(rng);
    const k = key(v);
    if (!taken.has(k) && splitOf(kind, k) === split) {
      taken.add(k);
      return v;
    }
  }
  throw new InfraError("internal", `could not draw a fresh ${kind} for split ${split}`);
}

const ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kr", "st", "tr", "th"];
const VOWELS = ["a", "e", "i", "o", "u"];
const CODAS = ["", "", "n", "r", "l", "s", "x"];

/** A pronounceable capitalised made-up word of 2–3 syllables (e.g. "Velmora"); single token for F1 purposes. */
export function madeUpName(rng: Rng): string {
  const syllables = rng.int(2, 3);
  let w = "";
  for (let i = 0; i < syllables; i++) w += rng.pick(ONSETS) + rng.pick(VOWELS);
  w += rng.pick(CODAS);
  return w.charAt(0).toUpperCase() + w.slice(1);
}
