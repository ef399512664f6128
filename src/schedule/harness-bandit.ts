import { z } from "zod";
import { UserError } from "../core/errors.js";
import { BaseScheduler, parseOwnState } from "./base.js";
import { cosine, explorationBonus, fuse, minMaxNormalise, norm, softmax, withFloor } from "./bandit-math.js";
import type { BanditConfig } from "./config.js";
import { SeededStream, sampleIndex } from "./rng.js";
import type { SchedulerObservation } from "./types.js";

/** One observation in the pooled window; `transfer` is null when the step had no transferability (see below). */
interface WindowEntry {
  harness: string;
  learn: number;
  transfer: number | null;
}

/** The latest observation of one harness, as it was normalised and fused when it arrived. */
interface ArmSignals {
  learn: number;
  transfer: number | null;
  learn_norm: number;
  transfer_norm: number;
  fused: number;
}

interface Arm {
  /** EMA of the harness's unit-length gradient sketches; null until it has one with a non-zero gradient. */
  sketch_ema: number[] | null;
  /** EMA of its fused values; null until its first observation. */
  score: number | null;
  last: ArmSignals | null;
}

const signalsSchema = z.strictObject({ learn: z.number(), transfer: z.number().nullable(), learn_norm: z.number(), transfer_norm: z.number(), fused: z.number() });
const stateSchema = z.looseObject({
  rng: z.number().int().min(0).max(0xffffffff),
  t: z.number().int().min(0),
  window: z.array(z.strictObject({ harness: z.string(), learn: z.number(), transfer: z.number().nullable() })),
  arms: z.array(z.strictObject({ sketch_ema: z.array(z.number()).nullable(), score: z.number().nullable(), last: signalsSchema.nullable() })),
  last_bonus: z.array(z.number().nullable()),
  last_peers: z.number().int().min(0),
});

/**
 * HarnessBandit (REFERENCE §2, docs/harness-bandit.md). After a step on harness h:
 *   ℓ = mean |advantage| of the step; τ = mean (or max) cosine between the step's unit gradient sketch and the sketch EMAs
 *   of the other harnesses that have one (missing when none has, or when the gradient is zero);
 *   ℓ̂, τ̂ = min-max over the pooled window of the last W observations (degenerate window → 0.5, missing τ → 0.5);
 *   f = (w_ℓ ℓ̂ + w_τ τ̂)/(w_ℓ + w_τ); score_h ← d·score_h + (1 − d)·f.
 * Choice: unvisited harnesses share the softmax mass equally (an infinite bonus); once all are visited,
 *   q = softmax((score_h + c·sqrt(ln(t+1)/(n_h+1))) / T), p = (1 − K p_min) q + p_min, sampled from a seeded stream.
 */
export class HarnessBanditScheduler extends BaseScheduler {
  readonly name = "harness-bandit";
  private readonly rng: SeededStream;
  private t = 0;
  private window: WindowEntry[] = [];
  private arms: Arm[];
  private lastBonus: (number | null)[];
  private lastPeers = 0;

  constructor(
    harnesses: readonly string[],
    readonly config: BanditConfig,
    seed: number,
  ) {
    super(harnesses);
    if (harnesses.length * config.p_min > 1 + 1e-12) {
      throw new UserError("invalid_config", `scheduler.p_min = ${config.p_min} is infeasible for ${harnesses.length} harnesses: K·p_min must be ≤ 1 (max ${1 / harnesses.length})`);
    }
    this.rng = new SeededStream(seed);
    this.arms = harnesses.map(() => ({ sketch_ema: null, score: null, last: null }));
    this.lastBonus = harnesses.map(() => null);
  }

  /** Options for trainer.gradSketch that make this scheduler's sketches comparable. */
  override get sketchOptions(): { dim: number; seed: number } {
    return { dim: this.config.sketch_dim, seed: this.config.sketch_seed };
  }

  protected choose(): { index: number; probabilities: number[]; scores?: Record<string, number> } {
    const k = this.harnesses.length;
    const unvisited = this.visits.map((n) => n === 0);
    const nUnvisited = unvisited.filter(Boolean).length;
    const scores: Record<string, number> = {};
    let q: number[];
    if (nUnvisited > 0) {
      q = unvisited.map((u) => (u ? 1 / nUnvisited : 0));
      this.lastBonus = this.harnesses.map(() => null);
    } else {
      const bonus = this.visits.map((n) => explorationBonus(this.config.bonus, this.t, n));
      const logits = this.arms.map((a, i) => (a.score ?? 0) + (bonus[i] ?? 0));
      this.harnesses.forEach((h, i) => (scores[h] = logits[i] ?? 0));
      q = softmax(logits, this.config.temperature);
      this.lastBonus = bonus;
    }
    const probabilities = withFloor(q, Math.min(this.config.p_min, 1 / k));
    const index = sampleIndex(probabilities, this.rng.next());
    // During warm-up there are no scores yet (unvisited harnesses have an infinite bonus).
    return nUnvisited > 0 ? { index, probabilities } : { index, probabilities, scores };
  }

  protected observe(index: number, observation: SchedulerObservation): void {
    const arm = this.arms[index] as Arm;
    const unit = this.unitSketch(observation.sketch);
    let transfer: number | null = null;
    let peers = 0;
    if (unit) {
      const cosines: number[] = [];
      this.arms.forEach((other, j) => {
        if (j !== index && other.sketch_ema) cosines.push(cosine(unit, other.sketch_ema));
      });
      peers = cosines.length;
      if (peers > 0) transfer = this.config.transfer_aggregate === "max" ? Math.max(...cosines) : cosines.reduce((a, b) => a + b, 0) / peers;
    }
    this.window.push({ harness: observation.harness, learn: observation.learnability, transfer });
    if (this.window.length > this.config.window) this.window.splice(0, this.window.length - this.config.window);
    const learnNorm = minMaxNormalise(observation.learnability, this.window.map((e) => e.learn));
    const transferNorm = transfer === null ? 0.5 : minMaxNormalise(transfer, this.window.flatMap((e) => (e.transfer === null ? [] : [e.transfer])));
    const fused = fuse(learnNorm, transferNorm, this.config.learn_weight, this.config.transfer_weight);
    const d = this.config.score_decay;
    arm.score = arm.score === null ? fused : d * arm.score + (1 - d) * fused;
    arm.last = { learn: observation.learnability, transfer, learn_norm: learnNorm, transfer_norm: transferNorm, fused };
    if (unit) {
      const e = this.config.sketch_decay;
      const prev = arm.sketch_ema;
      arm.sketch_ema = prev === null ? unit : unit.map((u, i) => e * (prev[i] ?? 0) + (1 - e) * u);
    }
    this.lastPeers = peers;
    this.t += 1;
  }

  /** The sketch scaled to unit length, so EMAs average directions, not magnitudes; null when absent, zero or not finite. */
  private unitSketch(sketch: SchedulerObservation["sketch"]): number[] | null {
    if (sketch === undefined) return null;
    if (sketch.length !== this.config.sketch_dim) {
      throw new UserError("invalid_observation", `gradient sketch has ${sketch.length} entries, the scheduler expects sketch_dim = ${this.config.sketch_dim}`);
    }
    const n = norm(sketch);
    if (!(n > 0) || !Number.isFinite(n)) return null;
    return Array.from(sketch, (v) => v / n);
  }

  protected ownState(): Record<string, unknown> {
    return {
      rng: this.rng.state,
      t: this.t,
      window: this.window.map((e) => ({ ...e })),
      arms: this.arms.map((a) => ({ sketch_ema: a.sketch_ema ? [...a.sketch_ema] : null, score: a.score, last: a.last ? { ...a.last } : null })),
      last_bonus: [...this.lastBonus],
      last_peers: this.lastPeers,
    };
  }

  protected restoreOwn(state: Record<string, unknown>): void {
    const s = parseOwnState(stateSchema, state, this.name);
    const k = this.harnesses.length;
    if (s.arms.length !== k || s.last_bonus.length !== k) throw new UserError("invalid_scheduler_state", `${this.name} state has ${s.arms.length} arms for ${k} harnesses`);
    for (const a of s.arms) {
      if (a.sketch_ema && a.sketch_ema.length !== this.config.sketch_dim) {
        throw new UserError("invalid_scheduler_state", `${this.name} state holds sketches of dim ${a.sketch_ema.length}, the config says sketch_dim = ${this.config.sketch_dim}`);
      }
    }
    this.rng.state = s.rng;
    this.t = s.t;
    this.window = s.window.slice(-this.config.window).map((e) => ({ ...e }));
    this.arms = s.arms.map((a) => ({ sketch_ema: a.sketch_ema ? [...a.sketch_ema] : null, score: a.score, last: a.last ? { ...a.last } : null }));
    this.lastBonus = [...s.last_bonus];
    this.lastPeers = s.last_peers;
  }

  protected ownLog(out: Record<string, number>): void {
    const c = this.lastChoice;
    out["bandit/t"] = this.t;
    out["bandit/window/size"] = this.window.length;
    out["bandit/transfer_peers"] = this.lastPeers;
    const learns = this.window.map((e) => e.learn);
    const transfers = this.window.flatMap((e) => (e.transfer === null ? [] : [e.transfer]));
    if (learns.length) {
      out["bandit/window/learn_min"] = Math.min(...learns);
      out["bandit/window/learn_max"] = Math.max(...learns);
    }
    if (transfers.length) {
      out["bandit/window/transfer_min"] = Math.min(...transfers);
      out["bandit/window/transfer_max"] = Math.max(...transfers);
    }
    this.harnesses.forEach((h, i) => {
      if (c) out[`bandit/prob/${h}`] = c.probabilities[h] ?? 0;
      const bonus = this.lastBonus[i];
      if (bonus !== null && bonus !== undefined) out[`bandit/bonus/${h}`] = bonus;
      const arm = this.arms[i] as Arm;
      if (arm.score !== null) out[`bandit/score/${h}`] = arm.score;
      const last = arm.last;
      if (!last) return;
      out[`bandit/learn/${h}`] = last.learn;
      out[`bandit/learn_norm/${h}`] = last.learn_norm;
      if (last.transfer !== null) out[`bandit/transfer/${h}`] = last.transfer;
      out[`bandit/transfer_norm/${h}`] = last.transfer_norm;
      out[`bandit/fused/${h}`] = last.fused;
    });
  }
}
