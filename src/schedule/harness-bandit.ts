import { z } from "zod";
import { UserError } from "../core/errors.js";
import { BaseScheduler, parseOwnState } from "./base.js";
import { combineTransfer, cosine, explorationBonus, fuse, minMaxNormalise, norm, softmax, withFloor } from "./bandit-math.js";
import type { BanditConfig } from "./config.js";
import { SeededStream, sampleIndex } from "./rng.js";
import type { ProbeObservation, ProbePlan, SchedulerObservation } from "./types.js";

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
  /** τ's parts: agreement with the other training harnesses, and the mean agreement with the probes (null: none). */
  transfer_train?: number | null;
  transfer_probe?: number | null;
  /** Cosine to each probe harness's sketch EMA (config order; null where that probe has none yet). */
  probe_cos?: (number | null)[];
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

/** A probe harness: never trained, so it has only a sketch EMA (and how many probe sketches it was sent). */
interface ProbeArm {
  sketch_ema: number[] | null;
  observations: number;
}

const signalsSchema = z.strictObject({
  learn: z.number(),
  transfer: z.number().nullable(),
  transfer_train: z.number().nullable().optional(),
  transfer_probe: z.number().nullable().optional(),
  probe_cos: z.array(z.number().nullable()).optional(),
  learn_norm: z.number(),
  transfer_norm: z.number(),
  fused: z.number(),
});
const stateSchema = z.looseObject({
  rng: z.number().int().min(0).max(0xffffffff),
  t: z.number().int().min(0),
  window: z.array(z.strictObject({ harness: z.string(), learn: z.number(), transfer: z.number().nullable() })),
  arms: z.array(z.strictObject({ sketch_ema: z.array(z.number()).nullable(), score: z.number().nullable(), last: signalsSchema.nullable() })),
  last_bonus: z.array(z.number().nullable()),
  last_peers: z.number().int().min(0),
  // Absent in states written before probe harnesses existed: the probes then start without sketches.
  probes: z.array(z.strictObject({ harness: z.string(), sketch_ema: z.array(z.number()).nullable(), observations: z.number().int().min(0) })).optional(),
  last_probe_peers: z.number().int().min(0).optional(),
});

/**
 * HarnessBandit (REFERENCE §2, docs/harness-bandit.md). After a step on harness h:
 *   ℓ = mean |advantage| of the step; τ_train = mean (or max) cosine between the step's unit gradient sketch and the
 *   sketch EMAs of the other harnesses that have one; τ_probe = mean cosine to the probe harnesses' sketch EMAs;
 *   τ = (1 − w_p)·τ_train + w_p·τ_probe when both exist, else whichever exists (missing when neither does, or when the
 *   gradient is zero; w_p = 0 ignores the probes);
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
  private probeArms: ProbeArm[];
  private lastProbePeers = 0;

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
    for (const p of config.probe_harnesses) {
      if (harnesses.includes(p)) throw new UserError("invalid_config", `probe harness "${p}" is also a training harness; probes are never trained on`);
    }
    if (new Set(config.probe_harnesses).size !== config.probe_harnesses.length) throw new UserError("invalid_config", "a probe harness is listed twice");
    this.probeArms = config.probe_harnesses.map(() => ({ sketch_ema: null, observations: 0 }));
  }

  override get probes(): ProbePlan | null {
    const c = this.config;
    return c.probe_harnesses.length ? { harnesses: [...c.probe_harnesses], every: c.probe_every, tasks: c.probe_tasks, samples: c.probe_samples ?? null } : null;
  }

  /** A probe's sketch updates only its EMA: probes have no learnability, window entry or score of their own. */
  override updateProbe(observation: ProbeObservation): void {
    const index = this.config.probe_harnesses.indexOf(observation.harness);
    if (index < 0) throw new UserError("unknown_harness", `probe update for unknown probe harness "${observation.harness}" (probes: ${this.config.probe_harnesses.join(", ") || "none"})`);
    const unit = this.unitSketch(observation.sketch);
    const probe = this.probeArms[index] as ProbeArm;
    if (unit) probe.sketch_ema = this.emaOf(probe.sketch_ema, unit);
    probe.observations += 1;
  }

  private emaOf(prev: number[] | null, unit: number[]): number[] {
    const e = this.config.sketch_decay;
    return prev === null ? unit : unit.map((u, i) => e * (prev[i] ?? 0) + (1 - e) * u);
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
    let transferTrain: number | null = null;
    let transferProbe: number | null = null;
    let peers = 0;
    const probeCos: (number | null)[] = this.probeArms.map((p) => (unit && p.sketch_ema ? cosine(unit, p.sketch_ema) : null));
    const probePeers = probeCos.filter((c) => c !== null).length;
    if (unit) {
      const cosines: number[] = [];
      this.arms.forEach((other, j) => {
        if (j !== index && other.sketch_ema) cosines.push(cosine(unit, other.sketch_ema));
      });
      peers = cosines.length;
      if (peers > 0) transferTrain = this.config.transfer_aggregate === "max" ? Math.max(...cosines) : cosines.reduce((a, b) => a + b, 0) / peers;
      // Probes always average: a max would hide the one held-out harness that the step hurts.
      if (probePeers > 0) transferProbe = probeCos.reduce((a: number, c) => a + (c ?? 0), 0) / probePeers;
    }
    const transfer = combineTransfer(transferTrain, transferProbe, this.config.probe_weight);
    this.window.push({ harness: observation.harness, learn: observation.learnability, transfer });
    if (this.window.length > this.config.window) this.window.splice(0, this.window.length - this.config.window);
    const learnNorm = minMaxNormalise(observation.learnability, this.window.map((e) => e.learn));
    const transferNorm = transfer === null ? 0.5 : minMaxNormalise(transfer, this.window.flatMap((e) => (e.transfer === null ? [] : [e.transfer])));
    const fused = fuse(learnNorm, transferNorm, this.config.learn_weight, this.config.transfer_weight);
    const d = this.config.score_decay;
    arm.score = arm.score === null ? fused : d * arm.score + (1 - d) * fused;
    arm.last = { learn: observation.learnability, transfer, learn_norm: learnNorm, transfer_norm: transferNorm, fused };
    if (this.probeArms.length) Object.assign(arm.last, { transfer_train: transferTrain, transfer_probe: transferProbe, probe_cos: probeCos });
    if (unit) arm.sketch_ema = this.emaOf(arm.sketch_ema, unit);
    this.lastPeers = peers;
    this.lastProbePeers = probePeers;
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
      arms: this.arms.map((a) => ({ sketch_ema: a.sketch_ema ? [...a.sketch_ema] : null, score: a.score, last: a.last ? copySignals(a.last) : null })),
      last_bonus: [...this.lastBonus],
      last_peers: this.lastPeers,
      ...(this.probeArms.length
        ? { probes: this.probeArms.map((p, i) => ({ harness: this.config.probe_harnesses[i] ?? "", sketch_ema: p.sketch_ema ? [...p.sketch_ema] : null, observations: p.observations })), last_probe_peers: this.lastProbePeers }
        : {}),
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
    const probes = s.probes ?? [];
    if (s.probes !== undefined && probes.map((p) => p.harness).join("\u0000") !== this.config.probe_harnesses.join("\u0000")) {
      throw new UserError("invalid_scheduler_state", `${this.name} state is for probe harnesses [${probes.map((p) => p.harness).join(", ")}], not [${this.config.probe_harnesses.join(", ")}]`);
    }
    for (const p of probes) {
      if (p.sketch_ema && p.sketch_ema.length !== this.config.sketch_dim) throw new UserError("invalid_scheduler_state", `${this.name} state holds probe sketches of dim ${p.sketch_ema.length}, the config says sketch_dim = ${this.config.sketch_dim}`);
    }
    this.rng.state = s.rng;
    this.t = s.t;
    this.window = s.window.slice(-this.config.window).map((e) => ({ ...e }));
    this.arms = s.arms.map((a) => ({ sketch_ema: a.sketch_ema ? [...a.sketch_ema] : null, score: a.score, last: a.last ? copySignals(a.last) : null }));
    this.lastBonus = [...s.last_bonus];
    this.lastPeers = s.last_peers;
    this.probeArms = s.probes ? s.probes.map((p) => ({ sketch_ema: p.sketch_ema ? [...p.sketch_ema] : null, observations: p.observations })) : this.config.probe_harnesses.map(() => ({ sketch_ema: null, observations: 0 }));
    this.lastProbePeers = s.last_probe_peers ?? 0;
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
      if (last.transfer_train !== undefined && last.transfer_train !== null) out[`bandit/transfer_train/${h}`] = last.transfer_train;
      if (last.transfer_probe !== undefined && last.transfer_probe !== null) out[`bandit/transfer_probe/${h}`] = last.transfer_probe;
      last.probe_cos?.forEach((c, j) => {
        const p = this.config.probe_harnesses[j];
        if (c !== null && p !== undefined) out[`bandit/probe_cos/${h}/${p}`] = c;
      });
    });
    if (!this.probeArms.length) return;
    out["bandit/probe_peers"] = this.lastProbePeers;
    this.config.probe_harnesses.forEach((p, j) => (out[`bandit/probe_visits/${p}`] = this.probeArms[j]?.observations ?? 0));
  }
}

function copySignals(s: ArmSignals): ArmSignals {
  return { ...s, ...(s.probe_cos ? { probe_cos: [...s.probe_cos] } : {}) };
}
