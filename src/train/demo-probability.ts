import type { BuiltBatch } from "../batch/batch-index.js";
import type { PackedRow } from "../batch/types.js";

/** How many of a call's first sampled tokens `DemoProbability.opening` covers by default. */
export const DEMO_OPENING_TOKENS = 4;

/** One row's trainable tokens and the sampled-token slot each one is. */
interface RowPlan {
  tokens: Int32Array;
  slots: Int32Array;
}

/**
 * During the warm start: the probability that the policy, sampling at temperature 1, reproduces an oracle
 * demonstration token for token (given the same harness and tool replies), averaged over the demonstrations:
 * mean over demos of exp(Σ log π(t)) over the tokens the demo's calls sampled.
 *
 * Why beside the NLL: held-out pass@1 at temperature 1 is an average of per-task success probabilities, and a
 * demonstration's reproduction probability is such a probability (a lower bound: other trajectories may also pass).
 * The mean token NLL hides how it is spread: exp(−mean) of per-demo sums is not their mean of exp, and a warm start
 * whose NLL is carried by a few hard demonstrations solves more tasks than one where every demonstration is a little
 * unsure. The log-probabilities are the trainer's own, from each SFT step's forward pass (before that step's update),
 * so it costs nothing; a token's value is from the last step that trained a row holding it, so the figure mixes the
 * parameters of the last epoch's steps, as the epoch-mean NLL does.
 *
 * A sampled token is a slot (call, offset in its completion): counted once per demonstration even where a split tree
 * repeats it in two rows, and for each demonstration whose paths hold it (identical demonstrations are separate trees
 * that share only their row's root prompt, so each counts its own tokens).
 */
export class DemoProbability {
  private readonly plans = new Map<PackedRow, RowPlan>();
  private readonly slotValue: Float64Array;
  private readonly slotSeen: Uint8Array;
  private unseen: number;
  /** Per demonstration with at least one sampled token: its slots. */
  private readonly demoSlots: Int32Array[];
  /** Per call with sampled tokens: the slots of its first `openingTokens` sampled tokens. */
  private readonly openingSlots: Int32Array[];

  /**
   * `openingTokens`: how many of a call's first sampled tokens `opening()` covers (4: a Hermes tool call's
   * `<tool_call>\n{"`, the place where some quickstart warm starts fail and RL does not repair them).
   */
  constructor(built: BuiltBatch, readonly openingTokens = DEMO_OPENING_TOKENS) {
    const demoOfPath = new Map<number, number>();
    const demoIndex = new Map<string, number>();
    for (const p of built.index.paths) {
      let d = demoIndex.get(p.rolloutId);
      if (d === undefined) demoIndex.set(p.rolloutId, (d = demoIndex.size));
      demoOfPath.set(p.id, d);
    }
    const slotOf = new Map<string, number>();
    const openings = new Map<number, Set<number>>();
    const owners: Set<number>[] = Array.from({ length: demoIndex.size }, () => new Set<number>());
    built.batch.rows.forEach((row, r) => {
      const side = built.index.rows[r];
      if (!side) return;
      const tokens: number[] = [];
      const slots: number[] = [];
      for (let i = 0; i < row.trainable.length; i++) {
        const offset = side.offset[i] ?? -1;
        if (row.trainable[i] !== 1 || offset < 0) continue;
        const key = `${side.call[i] ?? -1}:${offset}`;
        let slot = slotOf.get(key);
        if (slot === undefined) {
          slotOf.set(key, (slot = slotOf.size));
          if (offset < openingTokens) {
            const call = side.call[i] ?? -1;
            const set = openings.get(call) ?? new Set<number>();
            openings.set(call, set.add(slot));
          }
        }
        for (const path of side.pathSets[side.pathSet[i] ?? -1] ?? []) {
          const d = demoOfPath.get(path);
          if (d !== undefined) owners[d]?.add(slot);
        }
        tokens.push(i);
        slots.push(slot);
      }
      this.plans.set(row, { tokens: Int32Array.from(tokens), slots: Int32Array.from(slots) });
    });
    this.slotValue = new Float64Array(slotOf.size);
    this.slotSeen = new Uint8Array(slotOf.size);
    this.unseen = slotOf.size;
    this.demoSlots = owners.filter((s) => s.size > 0).map((s) => Int32Array.from(s));
    this.openingSlots = [...openings.values()].map((s) => Int32Array.from(s));
  }

  /** Demonstrations the figure averages over (those with sampled tokens in the batch). */
  get demos(): number {
    return this.demoSlots.length;
  }

  /** A micro-batch's rows and the trainer's logprobs for them (ForwardBackwardResult.logprobs, in the same order). */
  observe(rows: readonly PackedRow[], logprobs: readonly Float32Array[]): void {
    rows.forEach((row, j) => {
      const plan = this.plans.get(row);
      const lp = logprobs[j];
      if (!plan || !lp) return;
      for (let k = 0; k < plan.tokens.length; k++) {
        const slot = plan.slots[k] ?? -1;
        this.slotValue[slot] = lp[plan.tokens[k] ?? -1] ?? Number.NaN;
        if (this.slotSeen[slot] === 0) {
          this.slotSeen[slot] = 1;
          this.unseen--;
        }
      }
    });
  }

  /** The mean reproduction probability, once every sampled token has been through a step (NaN before). */
  value(): number {
    return this.meanProbability(this.demoSlots);
  }

  /**
   * The mean over demonstration calls of the probability of sampling the call's first `openingTokens` tokens as the
   * demonstration did (NaN until every sampled token has been through a step). A warm start can reproduce whole
   * demonstrations fairly often and still open a share of its calls wrongly (docs/training.md, session 41).
   */
  opening(): number {
    return this.meanProbability(this.openingSlots);
  }

  /** Mean over the groups of exp(Σ of their slots' logprobs); NaN while a sampled token has not been seen yet. */
  private meanProbability(groups: readonly Int32Array[]): number {
    if (groups.length === 0 || this.unseen > 0) return Number.NaN;
    let mean = 0;
    for (const slots of groups) {
      let sum = 0;
      for (const s of slots) sum += this.slotValue[s] ?? Number.NaN;
      mean += Math.exp(sum);
    }
    return mean / groups.length;
  }
}

/** A reproduction probability for a log line: three decimals, or its magnitude once it is below 0.001 (early SFT). */
export function formatProbability(p: number): string {
  return p >= 0.001 || p === 0 ? p.toFixed(3) : p.toExponential(1);
}
