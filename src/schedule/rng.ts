import { InfraError } from "../core/errors.js";
/**
 * A seeded splitmix32 stream whose whole state is one uint32, so a scheduler's randomness round-trips through JSON
 * and a resumed run draws exactly the numbers it would have drawn. (The same generator as src/tasks/prng.ts, with its
 * state exposed.)
 */
export class SeededStream {
  private s: number;

  constructor(seed: number) {
    this.s = seed >>> 0;
  }

  get state(): number {
    return this.s;
  }

  set state(value: number) {
    this.s = value >>> 0;
  }

  /** Uniform float in [0, 1). */
  next(): number {
    this.s = (this.s + 0x9e3779b9) >>> 0;
    let z = this.s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  }
}

/** Index drawn from `probabilities` with the uniform `u` ∈ [0, 1); the last positive entry absorbs rounding. */
export function sampleIndex(probabilities: readonly number[], u: number): number {
  let acc = 0;
  let last = -1;
  for (let i = 0; i < probabilities.length; i++) {
    const p = probabilities[i] ?? 0;
    if (p <= 0) continue;
    last = i;
    acc += p;
    if (u < acc) return i;
  }
  if (last < 0) throw new InfraError("internal", "no positive probability to sample from");
  return last;
}
