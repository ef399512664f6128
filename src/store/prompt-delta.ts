/**
 * Prompt tokens stored as a delta against the call they extend. A harness's turn N+1 prompt is, token for token, turn
 * N's prompt + completion + the new tool output, so storing every prompt whole costs O(turns²) bytes per session (a
 * 100-turn session with 20k-token prompts: ~8 MB of ids instead of ~0.5 MB) and a good part of a record's write time.
 * A row with `prompt_base_call_id` set holds only the tokens after the first `prompt_base_len` tokens of that base
 * call's prompt + completion. Readers get whole prompts back (`SqliteStore` resolves bases); the delta never leaves
 * the store.
 */

/** Full token sequences of recent calls, as inserted (the arrays are the records' own: no copies). */
export interface CallTokens {
  prompt: readonly number[];
  completion: readonly number[];
}

/**
 * How many recent calls the writer remembers as delta bases (LRU by insertion). A base is almost always its session's
 * latest call, so this is about one per concurrently active session; it bounds the token arrays kept alive here when
 * nothing else holds them (long real-harness prompts are ~100k tokens). A miss only stores that prompt whole.
 */
const DEFAULT_CAPACITY = 1024;

export class RecentCallTokens {
  private readonly map = new Map<string, CallTokens>();

  constructor(private readonly capacity = DEFAULT_CAPACITY) {}

  get(callId: string): CallTokens | undefined {
    return this.map.get(callId);
  }

  set(callId: string, tokens: CallTokens): void {
    this.map.delete(callId);
    this.map.set(callId, tokens);
    if (this.map.size > this.capacity) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
  }
}

/**
 * How many leading prompt tokens can be stored as a reference to `base` (0: store whole). The prefix is checked token
 * by token rather than trusted from the planner's `reusedPrefixTokens`, so a stored prompt is always exact.
 */
export function deltaPrefix(prompt: readonly number[], claimed: number, base: CallTokens | undefined): number {
  if (!base || claimed <= 0 || claimed > prompt.length || claimed > base.prompt.length + base.completion.length) return 0;
  const p = base.prompt.length;
  for (let i = 0; i < claimed; i++) {
    if (prompt[i] !== (i < p ? base.prompt[i] : base.completion[i - p])) return 0;
  }
  return claimed;
}

/** Rebuilds a whole prompt from its base's tokens and the stored suffix. */
export function joinPrompt(base: CallTokens, baseLen: number, suffix: readonly number[]): number[] {
  const out = new Array<number>(baseLen + suffix.length);
  const p = base.prompt.length;
  for (let i = 0; i < baseLen; i++) out[i] = (i < p ? base.prompt[i] : base.completion[i - p]) as number;
  for (let i = 0; i < suffix.length; i++) out[baseLen + i] = suffix[i] as number;
  return out;
}
