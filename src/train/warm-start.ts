import { InfraError } from "../core/errors.js";
import { Progress } from "../core/progress.js";
import { mulberry32 } from "../core/random.js";
import { RolloutStack } from "../rollout/stack.js";
import { removeSqliteFiles, sqliteFileOf } from "../store/registry.js";
import { retryLine, runRollouts } from "../rollout/runner.js";
import { runEngine, runStackOptions, type RunContext } from "../run/context.js";
import { loadSuite } from "../tasks/registry.js";
import type { Trainer } from "../trainer/types.js";
import { batchForRollouts } from "./batches.js";
import { unsolvedDemosLine } from "./demo-failures.js";
import { DemoProbability, formatProbability } from "./demo-probability.js";
import { lrAt, timeFitHorizon } from "./lr-schedule.js";
import { microBatches, setTokenMeanWeights } from "./micro-batches.js";
import { NllWindow } from "./nll-window.js";
import { PassRateCheck, type PassRateCheckPoint } from "./pass-rate-check.js";
import { sftStopReason, type SftStopReason } from "./sft-stop.js";

export interface WarmStartReport {
  demos: number;
  demoRollouts: number;
  trainableTokens: number;
  /** Optimizer steps the schedule planned (epochs × steps per epoch) and those that ran. */
  plannedSteps: number;
  /** May exceed `plannedSteps`: `max_epochs` extends SFT past the schedule while a stop target is unmet. */
  steps: number;
  /** Epochs begun (the last one may have stopped part-way). */
  epochs: number;
  /** True when `max_seconds` stopped SFT early: the policy is weaker than the config describes. */
  timeCapped: boolean;
  /** True when `stop_at_nll` stopped SFT (the configured strength, reached). */
  reachedTargetNll: boolean;
  /** True when `stop_at_demo_prob` stopped SFT. */
  reachedTargetDemoProb: boolean;
  /** True when `stop_at_pass_rate` stopped SFT. */
  reachedTargetPassRate: boolean;
  /** The held-in pass-rate checks of `stop_at_pass_rate`, in order (empty without it). */
  passChecks: PassRateCheckPoint[];
  /** True when a stop target was set and SFT ran out of epochs (`max_epochs`) before reaching it. */
  missedTarget: boolean;
  finalNll: number;
  /**
   * The probability of reproducing a demonstration token for token at temperature 1, averaged over the demonstrations,
   * as of SFT's last step (each token's logprob from the last step that trained it: demo-probability.ts); null when
   * SFT ended before every demonstration was trained on once.
   */
  finalDemoProb: number | null;
  /** The same for each demonstration call's first 4 sampled tokens (DemoProbability.opening); null alike. */
  finalDemoOpeningProb: number | null;
  /** Oracle demonstrations (rollouts) and SFT (its pass-rate checks included), then both. */
  demoMs: number;
  sftMs: number;
  /** Of `sftMs`, the pass-rate checks' (saving, serving and their rollouts). */
  checkMs: number;
  wallMs: number;
}

/** One SFT optimizer step, as metrics.jsonl charts it (`phase: "sft"` rows, x = `optimizer_step`). */
export interface SftPoint {
  optimizer_step: number;
  epoch: number;
  "sft/nll": number;
  /** Mean NLL over the last epoch's worth of steps: the value `stop_at_nll` is checked against. */
  "sft/nll_epoch_mean": number;
  "sft/lr": number;
  /** DemoProbability's figure after this step (from the end of the first epoch on: every demonstration seen once). */
  "sft/demo_prob"?: number;
  /** DemoProbability.opening after this step: how likely the policy opens a demonstration call as the demo did. */
  "sft/demo_opening_prob"?: number;
  /** Held-in pass@1 of the policy after this step, on the steps `stop_at_pass_rate` checked. */
  "sft/held_in_pass1"?: number;
}

export interface WarmStartResult {
  report: WarmStartReport;
  /** Every optimizer step's NLL and learning rate, in order. */
  curve: SftPoint[];
}

/**
 * A warning when demonstrations pack into so few rows that SFT gets only a handful of optimizer steps. A real CLI's
 * long prompt is packed once per row and each demonstration adds little to it (pi: ~1.4k shared + ~100 tokens each),
 * so rows sized for RL hold dozens of demonstrations: 8k-token rows gave 2 steps per epoch, 16 in all, and a policy
 * still at NLL 9.5. More, smaller rows give SFT its steps, or more epochs where the prompt dominates every row's cost
 * (Qwen Code: ~20 demonstrations share one 20k row, and a smaller row costs about as much per step).
 */
export function fewStepsAdvice(p: { demos: number; rows: number; perEpoch: number; total: number; rowTokens: number }): string | undefined {
  // Silent once the epochs already buy enough steps (a shared-prompt CLI: few steps per epoch, many epochs).
  if (p.perEpoch > 3 || p.demos < 4 * p.perEpoch || p.total >= 40) return undefined;
  const perRow = (p.demos / Math.max(1, p.rows)).toFixed(0);
  return `warm start: ${p.demos} demonstrations pack into ${p.rows} rows of <= ${p.rowTokens} tokens (~${perRow} per row, shared prompts counted once): only ${p.perEpoch} optimizer step(s) per epoch, ${p.total} in all; raise warm_start.epochs (the cheaper lever when demonstrations share a long prompt: a row of any size pays for the prompt once) or set warm_start.row_tokens (and batch_tokens) lower for more steps`;
}

/**
 * Supervised warm start on oracle demonstrations: the oracle solves the demo tasks through every training harness in
 * real sandboxes, its calls are recorded exactly like sampled ones (rendered with the policy's codec, so they are the
 * policy's token ids), and the same tree batches train the policy with the SFT objective (weighted NLL of the sampled
 * tokens).
 */
export async function warmStart(ctx: RunContext, trainer: Trainer, log: (line: string) => void): Promise<WarmStartResult> {
  const config = ctx.config;
  const ws = config.warm_start;
  if (!ws) throw new InfraError("internal", "warmStart called without a warm_start section");
  const started = Date.now();
  const rowTokens = ws.row_tokens ?? config.algorithm.row_tokens;
  const tasks = (await loadSuite(ws.demos)).tasks;
  // A warm start that was interrupted reruns from its first demonstration: the same rollout ids, so the calls its
  // earlier attempt recorded would be read back beside the new ones and every demonstration trained on twice
  // (measured: a resumed quickstart trained on 60,600 demonstration tokens instead of 30,300, 396 planned SFT steps).
  const demoFile = sqliteFileOf(ctx.stores.demos);
  if (demoFile) removeSqliteFiles(demoFile);
  const stack = await RolloutStack.open(runStackOptions(ctx, runEngine(ctx, "oracle"), ctx.stores.demos, { sampling: false }));
  let built;
  try {
    const progress = new Progress("demos", tasks.length * config.harnesses.length, { sink: ctx.run.progress });
    const results = await runRollouts(
      stack,
      { tasks, harnesses: config.harnesses, samples: 1, idPrefix: "demo" },
      {
        concurrency: config.rollout.concurrency,
        // Demonstrations are not limited by the policy's sampling budget: the oracle's turns are what they are.
        settings: { ...ctx.rolloutSettings, maxTurns: config.rollout.max_turns + 2, maxTokens: 1024 },
        onResult: (_r, done) => progress.update(done),
        onRetry: (failed, attempt, attempts) => log(retryLine(failed, attempt, attempts)),
      },
    );
    const good = results.filter((r) => r.status === "ok");
    log(`warm start: ${good.length}/${results.length} oracle demonstrations solved their task`);
    const unsolved = unsolvedDemosLine(results);
    if (unsolved) log(unsolved);
    built = batchForRollouts(stack.store, good, { rowTokens, trajectories: config.algorithm.trajectories });
  } finally {
    await stack.close().catch(() => undefined);
  }
  const demoMs = Date.now() - started;
  const sftStarted = Date.now();
  const rows = built.batch.rows;
  // Optimizer steps per epoch are fixed by the rows, so the schedule can span all epochs up front.
  const perEpoch = microBatches({ ...built.batch, rows }, ws.batch_tokens).length;
  const total = perEpoch * ws.epochs;
  const advice = fewStepsAdvice({ demos: built.stats.rollouts, rows: rows.length, perEpoch, total, rowTokens });
  if (advice) log(advice);
  const deadline = ws.max_seconds === undefined ? Infinity : Date.now() + ws.max_seconds * 1000;
  const random = mulberry32(config.seed ^ 0x5f7);
  let steps = 0;
  // The decay's horizon: the planned steps, or with fit_schedule_to_time the steps that fit before max_seconds.
  let horizon = total;
  // Step time for the fit, timed from the end of the first step: the first also pays the worker's warm-up.
  let timedFrom: { at: number; steps: number } | undefined;
  let nll = Number.NaN;
  const progress = new Progress("sft", total, { sink: ctx.run.progress });
  const window = new NllWindow(perEpoch);
  const demoProb = new DemoProbability(built);
  let stoppedBy: SftStopReason | undefined;
  const curve: SftPoint[] = [];
  // Past `epochs` only while a target is still unmet (max_epochs); lrAt holds the schedule's final rate there.
  const maxEpochs = Math.max(ws.epochs, ws.max_epochs ?? ws.epochs);
  let epochsRun = 0;
  const passStop = ws.stop_at_pass_rate;
  const checker = passStop ? new PassRateCheck(ctx, trainer, passStop, (await loadSuite(passStop.tasks)).tasks, log) : null;
  try {
    for (let epoch = 0; epoch < maxEpochs && Date.now() < deadline && stoppedBy === undefined; epoch++) {
      if (epoch === ws.epochs) log(`warm start: ${steps} planned SFT steps ended without reaching the target (epoch mean NLL ${window.mean().toFixed(4)}, demo prob ${formatProbability(demoProb.value())}); going on, up to max_epochs ${maxEpochs}`);
      epochsRun = epoch + 1;
      // A seeded shuffle per epoch: rows of different demonstrations meet in different optimizer steps.
      const order = rows.map((_, i) => i);
      for (let i = order.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [order[i], order[j]] = [order[j] as number, order[i] as number];
      }
      const shuffled = { ...built.batch, rows: order.map((i) => rows[i]!) };
      for (const mb of microBatches(shuffled, ws.batch_tokens)) {
        if (Date.now() >= deadline) break;
        if (ws.fit_schedule_to_time) {
          const now = Date.now();
          const stepMs = timedFrom !== undefined && steps > timedFrom.steps ? (now - timedFrom.at) / (steps - timedFrom.steps) : undefined;
          horizon = timeFitHorizon({ planned: total, previous: horizon, done: steps, stepMs, remainingMs: deadline - now });
        }
        setTokenMeanWeights(mb);
        const fb = await trainer.forwardBackward(mb, { objective: "sft" });
        steps++;
        const lr = lrAt(ws.lr, ws.lr_schedule, steps, horizon);
        await trainer.optimStep({ lr, maxGradNorm: 1 });
        timedFrom ??= { at: Date.now(), steps };
        nll = fb.nllMean;
        const mean = window.push(nll);
        demoProb.observe(mb.rows, fb.logprobs);
        const prob = demoProb.value();
        const opening = demoProb.opening();
        const point: SftPoint = { optimizer_step: steps, epoch: epoch + 1, "sft/nll": nll, "sft/nll_epoch_mean": mean, "sft/lr": lr, ...(Number.isFinite(prob) ? { "sft/demo_prob": prob } : {}), ...(Number.isFinite(opening) ? { "sft/demo_opening_prob": opening } : {}) };
        curve.push(point);
        progress.update(Math.min(steps, total), `epoch ${epoch + 1}/${epoch < ws.epochs ? ws.epochs : maxEpochs} nll ${nll.toFixed(3)} (epoch mean ${mean.toFixed(3)})${Number.isFinite(prob) ? ` demo prob ${formatProbability(prob)}` : ""}`);
        stoppedBy = sftStopReason({ nll: ws.stop_at_nll, demoProb: ws.stop_at_demo_prob }, window, prob);
        if (stoppedBy === undefined && checker?.due(steps, prob)) {
          const check = await checker.measure(steps);
          point["sft/held_in_pass1"] = check.passRate;
          if (checker.reached(check)) stoppedBy = "pass_rate";
        }
        if (stoppedBy !== undefined) {
          log(
            stoppedBy === "nll"
              ? `warm start: mean NLL ${mean.toFixed(4)} over the last ${window.size} steps reached stop_at_nll ${ws.stop_at_nll} after ${steps} of ${total} SFT steps`
              : stoppedBy === "demo_prob"
                ? `warm start: demonstrations reproduced with probability ${formatProbability(prob)}, reaching stop_at_demo_prob ${ws.stop_at_demo_prob} after ${steps} of ${total} SFT steps`
                : `warm start: held-in pass@1 reached stop_at_pass_rate ${checker?.target} after ${steps} of ${total} SFT steps`,
          );
          break;
        }
      }
    }
  } finally {
    await checker?.close();
  }
  progress.close();
  const timeCapped = Date.now() >= deadline && stoppedBy === undefined && (steps < total || epochsRun < maxEpochs);
  if (timeCapped) log(`warm start: max_seconds ${ws.max_seconds} reached after ${steps} of ${total} SFT steps; the policy is less trained than configured${ws.fit_schedule_to_time ? ` (the decay was fitted to ${horizon} steps)` : ""}`);
  const missedTarget = (ws.stop_at_nll !== undefined || ws.stop_at_demo_prob !== undefined || passStop !== undefined) && stoppedBy === undefined && !timeCapped;
  if (missedTarget) log(`warm start: WARNING: SFT ended after ${steps} steps (${epochsRun} epochs) without reaching its target; RL starts from a weaker policy than configured (raise warm_start.max_epochs)`);
  const end = Date.now();
  return {
    report: { demos: tasks.length, demoRollouts: built.stats.rollouts, trainableTokens: built.stats.trainableTokens, plannedSteps: total, steps, epochs: epochsRun, timeCapped, reachedTargetNll: stoppedBy === "nll", reachedTargetDemoProb: stoppedBy === "demo_prob", reachedTargetPassRate: stoppedBy === "pass_rate", passChecks: checker?.points ?? [], missedTarget, finalNll: nll, finalDemoProb: finiteOrNull(demoProb.value()), finalDemoOpeningProb: finiteOrNull(demoProb.opening()), demoMs, sftMs: end - sftStarted, checkMs: (checker?.points ?? []).reduce((a, p) => a + p.ms, 0), wallMs: end - started },
    curve,
  };
}

const finiteOrNull = (v: number): number | null => (Number.isFinite(v) ? v : null);
