/**
 * Prompt tokens stored as a delta against the call they extend. A harness's turn N+1 prompt is, token for token, turn
 * N's prompt + completion + the new tool output, so storing every prompt whole costs O(turns²) bytes per session (a
 * 100-turn session with 20k-token prompts: ~8 MB of ids instead of ~0.5 MB) and a good part of a record's write time.
 * A row with `prompt_base_call_id` set holds only the tokens after the first `prompt_base_len` tokens of that base
 * call's prompt + completion. Readers get whole prompts back (`SqliteStore` resolves bases); the delta never leaves
 * the store.
 */

/** Full token sequences of a call, as read back (the base of a delta). */
export interface CallTokens {
  prompt: readonly number[];
  completion: readonly number[];
}

/**
 * What the writer keeps of a recent call to check that a new prompt extends it: the length and a 64-bit digest of its
 * prompt + completion. Not the tokens: holding every recent call's ~40 kB prompt array kept them alive long enough to
 * be copied by the young-generation GC, which was about a tenth of the proxy's CPU per call.
 */
export interface CallDigest {
  length: number;
  hash: string;
}

/**
 * Two independent 32-bit multiplicative hashes over token ids, fed incrementally: a prompt is hashed once, for the
 * delta check and then on into the completion for the next call's base. This guards against a planner bug claiming a
 * prefix that is not one, not against an adversary (the ids are our own tokenizer's output).
 */
export class TokenHasher {
  private h1 = 0x811c9dc5;
  private h2 = 0x01000193;
  length = 0;

  update(tokens: readonly number[], from = 0, to = tokens.length): this {
    let { h1, h2 } = this;
    for (let i = from; i < to; i++) {
      const t = tokens[i] as number;
      h1 = Math.imul(h1 ^ t, 0x01000193);
      h2 = Math.imul(h2 + t + 0x9e3779b9, 0x85ebca6b) ^ (h2 >>> 13);
    }
    this.h1 = h1;
    this.h2 = h2;
    this.length += Math.max(0, to - from);
    return this;
  }

  digest(): CallDigest {
    return { length: this.length, hash: `${(this.h1 >>> 0).toString(36)}.${(this.h2 >>> 0).toString(36)}` };
  }
}

/**
 * How many leading prompt tokens can be stored as a reference to `base` (0: store whole). The prefix is checked
 * against the base's digest rather than trusted from the planner's `reusedPrefixTokens`; a prompt that reuses less
 * than its base's whole prompt + completion is stored whole (the planner always claims all of it). `hasher` is left
 * holding the digest of the checked prefix when the check ran, so the caller can continue it.
 */
export function deltaPrefix(prompt: readonly number[], claimed: number, base: CallDigest | undefined, hasher = new TokenHasher()): number {
  if (!base || claimed <= 0 || claimed > prompt.length || claimed !== base.length) return 0;
  return hasher.update(prompt, 0, claimed).digest().hash === base.hash ? claimed : 0;
}

/** Rebuilds a whole prompt from its base's tokens and the stored suffix. */
export function joinPrompt(base: CallTokens, baseLen: number, suffix: readonly number[]): number[] {
  const out = new Array<number>(baseLen + suffix.length);
  const p = base.prompt.length;
  for (let i = 0; i < baseLen; i++) out[i] = (i < p ? base.prompt[i] : base.completion[i - p]) as number;
  for (let i = 0; i < suffix.length; i++) out[baseLen + i] = suffix[i] as number;
  return out;
}
