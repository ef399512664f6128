import { InfraError } from "../core/errors.js";
import { isHotSwappable } from "../engine/types.js";
import { summarise } from "../eval/metrics.js";
import { retryLine, runRollouts } from "../rollout/runner.js";
import { RolloutStack } from "../rollout/stack.js";
import { runEngine, runStackOptions, type RunContext } from "../run/context.js";
import type { Task } from "../tasks/task.js";
import type { Trainer } from "../trainer/types.js";
import type { PassRateStop } from "./config.js";

/** One held-in check during the warm start: the policy after `step` SFT steps solved `passRate` of its rollouts. */
export interface PassRateCheckPoint {
  step: number;
  passRate: number;
  rollouts: number;
  ms: number;
}

/** The sampling key of the checks: every check draws the same random numbers, so two checks differ by the policy only. */
export function passCheckSeedKey(runSeed: number): string {
  return `sft-check-seed-${runSeed}`;
}

/**
 * `warm_start.stop_at_pass_rate`: the policy's own pass@1 on held-in tasks, measured during SFT. RL learns from the
 * successes it samples, so the strength RL starts from is a pass rate; the NLL or the demonstrations' reproduction
 * probability only predict it (the same NLL target left held-out starts of 14–53 %, docs/training.md). A check saves
 * the policy, serves it on the run's engine (opened at the first check, hot-swapped after) and runs one rollout per
 * task and harness through the run's harnesses and sandboxes, at the run's sampling temperature with common random
 * numbers across checks. Checks cost rollouts, so they begin only once the cheap signal (`from_demo_prob`) says the
 * policy is close, and repeat every `every_steps` optimizer steps.
 */
export class PassRateCheck {
  private stack: RolloutStack | null = null;
  readonly points: PassRateCheckPoint[] = [];

  constructor(
    private readonly ctx: RunContext,
    private readonly trainer: Trainer,
    private readonly spec: PassRateStop,
    private readonly tasks: readonly Task[],
    private readonly log: (line: string) => void,
  ) {}

  /** Whether a check is due after `step` optimizer steps, given the demonstrations' reproduction probability then. */
  due(step: number, demoProb: number): boolean {
    if (!(Number.isFinite(demoProb) && demoProb >= this.spec.from_demo_prob)) return false;
    const last = this.points[this.points.length - 1];
    return last === undefined || step - last.step >= this.spec.every_steps;
  }

  /** Whether a check reached the configured pass rate (SFT stops there). */
  reached(point: PassRateCheckPoint): boolean {
    return point.passRate >= this.spec.target;
  }

  get target(): number {
    return this.spec.target;
  }

  /** Measures the current policy's held-in pass rate (and records it). */
  async measure(step: number): Promise<PassRateCheckPoint> {
    const started = Date.now();
    const dir = this.ctx.run.path("sft-check-policy");
    await this.trainer.save(dir, { policyVersion: 0 });
    if (this.stack === null) {
      this.stack = await RolloutStack.open(runStackOptions(this.ctx, runEngine(this.ctx, { policyDir: dir }), this.ctx.stores.demos));
    } else {
      const engine = this.stack.engine;
      if (!isHotSwappable(engine)) throw new InfraError("internal", `engine ${engine.spec} cannot switch policies between warm-start checks`);
      // The first check opened the engine on its snapshot; each later one loads its own as the next version (2, 3, …).
      await engine.loadPolicy(dir, this.points.length + 1);
    }
    const results = await runRollouts(
      this.stack,
      { tasks: this.tasks, harnesses: this.ctx.config.harnesses, samples: 1, idPrefix: `sft-check-${step}`, samplingSeeds: passCheckSeedKey(this.ctx.config.seed) },
      { concurrency: this.ctx.config.rollout.concurrency, settings: this.ctx.rolloutSettings, onRetry: (failed, attempt, attempts) => this.log(retryLine(failed, attempt, attempts)) },
    );
    const summary = summarise(results, 1);
    const point = { step, passRate: summary.overall.passAt1, rollouts: results.length, ms: Date.now() - started };
    this.points.push(point);
    this.log(`warm start: held-in pass@1 ${(100 * point.passRate).toFixed(1)}% after ${step} SFT steps (${results.length} rollouts, ${(point.ms / 1000).toFixed(1)} s; stop_at_pass_rate ${this.spec.target})`);
    return point;
  }

  async close(): Promise<void> {
    await this.stack?.close();
    this.stack = null;
  }
}
