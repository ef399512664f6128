import { z } from "zod";
import { InfraError, UserError } from "../core/errors.js";
import type { HarnessScheduler, ProbeObservation, ProbePlan, SchedulerChoice, SchedulerObservation, SchedulerState } from "./types.js";

const STATE_VERSION = 1;

const choiceSchema = z.strictObject({
  step: z.number().int(),
  harness: z.string(),
  probabilities: z.record(z.string(), z.number()),
  scores: z.record(z.string(), z.number()).optional(),
});

const baseStateSchema = z.looseObject({
  scheduler: z.string(),
  version: z.literal(STATE_VERSION),
  harnesses: z.array(z.string()),
  visits: z.array(z.number().int().min(0)),
  last_choice: choiceSchema.nullable(),
  last_update: z.string().nullable(),
});

/**
 * What every scheduler shares: the harness list, visit counts (observations per harness), the latest choice and the
 * common part of the log and of the resumable state. Subclasses add their own decision rule and state.
 */
export abstract class BaseScheduler implements HarnessScheduler {
  abstract readonly name: string;
  readonly harnesses: readonly string[];
  protected visits: number[];
  protected lastChoice: SchedulerChoice | null = null;
  protected lastUpdate: string | null = null;

  get sketchOptions(): { dim: number; seed: number } | null {
    return null;
  }

  get probes(): ProbePlan | null {
    return null;
  }

  /** Schedulers without probe harnesses know none. */
  updateProbe(observation: ProbeObservation): void {
    throw new UserError("unknown_harness", `scheduler "${this.name}" has no probe harness "${observation.harness}"`);
  }

  constructor(harnesses: readonly string[]) {
    if (harnesses.length === 0) throw new UserError("invalid_config", "a harness scheduler needs at least one harness");
    const seen = new Set<string>();
    for (const h of harnesses) {
      if (!h) throw new UserError("invalid_config", "harness names must be non-empty");
      if (seen.has(h)) throw new UserError("invalid_config", `harness "${h}" is listed twice`);
      seen.add(h);
    }
    this.harnesses = [...harnesses];
    this.visits = harnesses.map(() => 0);
  }

  protected abstract choose(step: number): { index: number; probabilities: number[]; scores?: Record<string, number> };
  protected abstract observe(index: number, observation: SchedulerObservation): void;
  protected abstract ownState(): Record<string, unknown>;
  protected abstract restoreOwn(state: Record<string, unknown>): void;
  protected abstract ownLog(out: Record<string, number>): void;

  next(step: number): SchedulerChoice {
    if (!Number.isInteger(step) || step < 0) throw new UserError("invalid_step", `scheduler step must be a non-negative integer, got ${step}`);
    const { index, probabilities, scores } = this.choose(step);
    const harness = this.harnesses[index];
    if (harness === undefined) throw new InfraError("internal", `scheduler chose index ${index} of ${this.harnesses.length}`);
    const probs: Record<string, number> = {};
    this.harnesses.forEach((h, i) => (probs[h] = probabilities[i] ?? 0));
    this.lastChoice = scores ? { step, harness, probabilities: probs, scores } : { step, harness, probabilities: probs };
    return structuredClone(this.lastChoice);
  }

  update(observation: SchedulerObservation): void {
    const index = this.harnesses.indexOf(observation.harness);
    if (index < 0) throw new UserError("unknown_harness", `scheduler update for unknown harness "${observation.harness}" (known: ${this.harnesses.join(", ")})`);
    const l = observation.learnability;
    if (!Number.isFinite(l) || l < 0) throw new UserError("invalid_observation", `learnability must be a finite number ≥ 0, got ${l}`);
    this.observe(index, observation);
    this.visits[index] = (this.visits[index] ?? 0) + 1;
    this.lastUpdate = observation.harness;
  }

  state(): SchedulerState {
    return {
      scheduler: this.name,
      version: STATE_VERSION,
      harnesses: [...this.harnesses],
      visits: [...this.visits],
      last_choice: this.lastChoice ? structuredClone(this.lastChoice) : null,
      last_update: this.lastUpdate,
      ...this.ownState(),
    };
  }

  restore(state: unknown): void {
    const r = baseStateSchema.safeParse(state);
    if (!r.success) throw new UserError("invalid_scheduler_state", `scheduler state is malformed: ${r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
    const s = r.data;
    if (s.scheduler !== this.name) throw new UserError("invalid_scheduler_state", `scheduler state is for "${s.scheduler}", not "${this.name}"`);
    if (s.harnesses.join("\u0000") !== this.harnesses.join("\u0000") || s.visits.length !== this.harnesses.length) {
      throw new UserError("invalid_scheduler_state", `scheduler state is for harnesses [${s.harnesses.join(", ")}], not [${this.harnesses.join(", ")}]`);
    }
    this.restoreOwn(s);
    this.visits = [...s.visits];
    this.lastChoice = s.last_choice ? structuredClone(s.last_choice) as SchedulerChoice : null;
    this.lastUpdate = s.last_update;
  }

  log(): Record<string, number> {
    const out: Record<string, number> = {};
    const c = this.lastChoice;
    if (c) out["sched/step"] = c.step;
    this.harnesses.forEach((h, i) => {
      if (c) {
        out[`sched/prob/${h}`] = c.probabilities[h] ?? 0;
        out[`sched/pick/${h}`] = c.harness === h ? 1 : 0;
      }
      out[`sched/visits/${h}`] = this.visits[i] ?? 0;
    });
    this.ownLog(out);
    return out;
  }
}

/** Throws the standard error for a subclass's own state that does not parse. */
export function parseOwnState<T>(schema: z.ZodType<T>, state: Record<string, unknown>, name: string): T {
  const r = schema.safeParse(state);
  if (!r.success) throw new UserError("invalid_scheduler_state", `${name} state is malformed: ${r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return r.data;
}
