import type { LlamaContextSequence, Token } from "node-llama-cpp";
import type { PrefixStates } from "./prefix-states.js";

/** How a prompt reached a sequence's KV cache: tokens it already held, loaded from a shared prefix, left to evaluate. */
export interface Alignment {
  /** Prompt tokens still to evaluate when sampling starts (≥ 1: the last one gives the first token's logits). */
  toEval: readonly number[];
  /** Tokens the sequence's own cache already held. */
  reused: number;
  /** Tokens taken from another sequence's published prefix (prefix-states.ts). */
  shared: number;
  /** Tokens evaluated here, before sampling, to publish them as a shared prefix. */
  published: number;
}

function sharedWith(seq: LlamaContextSequence, prompt: readonly number[]): number {
  return Math.min(seq.compareContextTokens(prompt as Token[]).firstDifferentIndex, prompt.length - 1);
}

/** Waits for `p` unless `signal` fires first (then resolves false). */
function unlessAborted(p: Promise<boolean>, signal: AbortSignal | undefined): Promise<boolean> {
  if (!signal) return p;
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const onAbort = (): void => resolve(false);
    signal.addEventListener("abort", onAbort, { once: true });
    void p.then((ok) => {
      signal.removeEventListener("abort", onAbort);
      resolve(ok);
    });
  });
}

/**
 * Makes `seq`'s KV cache hold the longest available prefix of `prompt`: its own cached tokens, or a longer prefix
 * another sequence published (loaded from its state file; waiting for it if it is still being evaluated). When neither
 * covers a long stretch of the prompt and `states` is given, the stretch is evaluated and published first, so requests
 * arriving meanwhile wait for it instead of evaluating it again. Drops cached tokens after the shared prefix.
 */
export async function alignSequence(seq: LlamaContextSequence, prompt: readonly number[], states: PrefixStates | undefined, signal?: AbortSignal): Promise<Alignment> {
  const reused = sharedWith(seq, prompt);
  let have = reused;
  const claim = states?.claim(prompt, have);
  if (claim) {
    try {
      if (await unlessAborted(claim.ready, signal)) {
        await seq.loadStateFromFile(claim.file, { acceptRisk: true });
        have = sharedWith(seq, prompt);
      }
    } catch {
      // The file went (evicted, disposed) or did not load: evaluate from scratch rather than trust a half-loaded cache.
      await seq.clearHistory();
      have = 0;
    } finally {
      claim.release();
    }
  }
  if (have < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: have, end: seq.nextTokenIndex }]);
  const own = Math.min(reused, have);
  const pending = signal?.aborted ? undefined : states?.begin(prompt.slice(0, -1), have);
  if (!pending) return { toEval: prompt.slice(have), reused: own, shared: have - own, published: 0 };
  try {
    await seq.evaluateWithoutGeneratingNewTokens(prompt.slice(have, -1) as Token[]);
    const { fileSize } = await seq.saveStateToFile(pending.file);
    pending.publish(fileSize);
  } catch (e) {
    pending.abandon();
    throw e;
  }
  return { toEval: prompt.slice(-1), reused: own, shared: have - own, published: prompt.length - 1 - have };
}
