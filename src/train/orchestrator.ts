import { existsSync, readFileSync } from "node:fs";
import { UserError } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { Progress } from "../core/progress.js";
import { countsPromptTokens, isHotSwappable, type PromptTokenCounts } from "../engine/types.js";
import { passChange, type EvalSummary, type PassChange } from "../eval/metrics.js";
import { RolloutStack } from "../rollout/stack.js";
import { retryLine, runRollouts } from "../rollout/runner.js";
import { openTrainer, runEngine, runStackOptions, type RunContext } from "../run/context.js";
import type { RolloutResult } from "../tasks/rollout-result.js";
import { loadSuite } from "../tasks/registry.js";
import type { Task } from "../tasks/task.js";
import { requireCapability } from "../trainer/capabilities.js";
import type { Trainer } from "../trainer/types.js";
import { evaluatePolicy, type ClusterEvaluation, type EvaluateOptions } from "./evaluate.js";
import { advantageConfigOf, trainOnRollouts } from "./rl-step.js";
import { probeStep } from "./probe-step.js";
import { writeReport } from "../report/index.js";
import type { RunState } from "./run-dir.js";
import { faultPoint } from "./fault.js";
import { checkClusterTraining, ClusterSteps } from "./cluster-launch.js";
import { TaskSampler } from "./task-sampler.js";
import { trainingSeedKey } from "./seed-keys.js";
import { checkTrainerCapabilities } from "./trainer-capabilities.js";
import { warmStart, type WarmStartReport } from "./warm-start.js";
import { DEMO_OPENING_TOKENS, formatProbability } from "./demo-probability.js";

interface Pending {
  promise: Promise<RolloutResult[]>;
  cursor: number;
  startedAt: number;
  /** The harness the scheduler picked for this step (scheduled mode). */
  harness: string | null;
  /** The probe harnesses' rollouts of this step (HarnessBandit `probe_harnesses`, on probe steps), never trained on. */
  probes: Promise<RolloutResult[]> | null;
}

export interface RunSummary {
  name: string;
  runDir: string;
  /** RL steps that ran, and those `budget.steps` planned. */
  steps: number;
  plannedSteps: number;
  /** Set when `budget.max_minutes` ended RL before `plannedSteps` (the result is that of a shorter run). */
  timeCapped: boolean;
  policyVersion: number;
  wallSeconds: number;
  trainSeconds: number;
  before: PassTable | null;
  after: PassTable | null;
  delta: PassDelta | null;
  /** This process's warm start (null when there was none or it ran before a resume). */
  warmStart: WarmStartReport | null;
  /** Where this process's wall time went, in seconds (a resumed run counts only what it ran itself). */
  timing: RunTiming;
}

export interface RunTiming {
  warmStart: number;
  evalBefore: number;
  evalAfter: number;
  /** RL steps: waiting for rollouts, the trainer's step(s), and saving + checkpointing + the engine's policy swap. */
  rollouts: number;
  train: number;
  swap: number;
}

export interface PassTable {
  overall: number;
  /** Standard error of `overall` (see GroupMetrics.passAt1Stderr). */
  overallStderr: number;
  /** Rollouts the evaluation ran (tasks × harnesses × samples). */
  rollouts: number;
  byHarness: Record<string, number>;
  meanScore: number;
}

/** after − before on held-out pass@1 with its standard error (see PassChange: paired when both ran the same tasks). */
export interface PassDelta {
  overall: number;
  stderr: number;
  /** overall / stderr: how many standard errors the change is. */
  z: number;
  paired: boolean;
  /** (task, harness) groups the change is computed over. */
  groups: number;
  /** Paired: planned groups left out because one evaluation lost all of the group's rollouts to infra errors. */
  dropped: number;
  /**
   * Both evaluations drew the same random numbers per rollout (the same `samplingSeeds` key): the paired SE is then
   * much smaller than with independent seeds (docs/training.md, common random numbers). Absent in older summaries.
   */
  commonRandomNumbers?: boolean;
}

function passTable(s: EvalSummary): PassTable {
  return { overall: s.overall.passAt1, overallStderr: s.overall.passAt1Stderr, rollouts: s.overall.rollouts, meanScore: s.overall.meanScore, byHarness: Object.fromEntries(Object.entries(s.byHarness).map(([h, m]) => [h, m.passAt1])) };
}

export function passDelta(before: EvalSummary, after: EvalSummary): PassDelta {
  const c: PassChange = passChange(before.overall, after.overall);
  const common = before.samplingSeeds !== undefined && before.samplingSeeds === after.samplingSeeds;
  return { overall: c.change, stderr: c.stderr, z: c.z, paired: c.paired, groups: c.groups, dropped: c.dropped, commonRandomNumbers: c.paired && common };
}

/**
 * The training loop. Sync mode: sample tasks → rollouts through sandboxes and harnesses → settle → trees → advantages
 * → train → save weights → the engine switches to the new policy version. Async mode overlaps the next step's rollouts
 * with training (tokens carry the version that sampled them; those more than `max_staleness` behind are dropped).
 * Every step commits atomically (RunDir.commit: new policy + checkpoint + metrics line, then the state pointer, then
 * cleanup), so a run killed anywhere resumes at the next step with exactly the same data order and loses no step.
 * Every piece (policy and its codec, engine spec, trainers, stores, scheduler) comes from the run context.
 */
export async function runTraining(ctx: RunContext, log: (line: string) => void = (l) => console.error(l)): Promise<RunSummary> {
  const { config, run } = ctx;
  const started = Date.now();
  checkClusterTraining(config);
  // Whatever a kill left past the last commit (a newer policy, a checkpoint, a metrics line, tmp files) goes first.
  const recovered = run.recover();
  let state: RunState = recovered ?? { version: 1, step: 0, policyVersion: 0, warmStartDone: false, evalBeforeDone: false, taskCursor: 0, checkpoint: null, startedAt: started, trainMs: 0 };
  const resumed = state.step > 0 || state.warmStartDone;
  if (resumed) log(`resuming ${run.root} at step ${state.step} (policy v${state.policyVersion})`);
  const changed = ctx.configChange;
  if (changed) log(`the config differs from the one this run directory had in ${changed.changes.length} place(s); continuing with the new one (the previous is kept as ${changed.previous}): ${changed.changes.join("; ")}`);

  const timing: RunTiming = { warmStart: 0, evalBefore: 0, evalAfter: 0, rollouts: 0, train: 0, swap: 0 };
  const since = (t: number): number => (Date.now() - t) / 1000;
  const trainer = await openTrainer(ctx, "policy");
  let stack: RolloutStack | null = null;
  let reference: Trainer | null = null;
  // `cluster:`: each step's rollouts run as jobs on rollout nodes and train from the central store (cluster-launch.ts).
  let cluster: ClusterSteps | null = null;
  try {
    // PPO, CAPO and sketch-comparing schedulers need optional trainer capabilities: fail before any work is done.
    checkTrainerCapabilities(trainer, config);
    // CAPO partitions and the PPO critic travel in checkpoints: a resumed run keeps the re-probe schedule and the
    // critic of an uninterrupted one.
    let capoRestored = false;
    let criticReady = false;
    // LoRA adapters travel in checkpoints too (on the base they recorded); otherwise they are attached below.
    let loraReady = false;
    // Model: a checkpoint when resuming, else the latest policy, else the configured start (absolute paths).
    const start = ctx.policy.start;
    if (state.checkpoint) ({ hasCapoMasks: capoRestored, hasCritic: criticReady, hasLora: loraReady } = await trainer.loadCheckpoint(state.checkpoint));
    else if (existsSync(run.policyDir(state.policyVersion))) await trainer.load(run.policyDir(state.policyVersion));
    else if ("preset" in start) await trainer.init({ preset: start.preset, seed: start.seed, out: run.policyDir(0), ...(start.modelType ? { modelType: start.modelType } : {}) });
    else {
      if ("checkpoint" in start) {
        // Continue from another run's state, optimizer included: a fresh AdamW's first steps move every weight by
        // about the learning rate, which a warm-started policy may not survive at an RL rate tuned on continued moments.
        ({ hasCapoMasks: capoRestored, hasCritic: criticReady, hasLora: loraReady } = await trainer.loadCheckpoint(start.checkpoint));
      } else await trainer.load(start.dir);
      await trainer.save(run.policyDir(0), { policyVersion: 0 });
    }
    // The first commit: policy v0 is complete (a kill during its write leaves no state, so the next run starts afresh).
    if (!recovered) state = await run.commit(state, { written: [run.policyDir(0)], step: 0 });

    // model.lora: fresh adapters on the weights now loaded, whose frozen base is the current policy version's directory
    // (v0, or v1 after a full warm start: both are kept for the whole run, so checkpoints can always find their base).
    const lora = config.model.lora;
    const attachLora = async (): Promise<void> => {
      if (!lora || loraReady) return;
      const info = await requireCapability(trainer, "lora", "the config's model.lora").loraInit({ rank: lora.rank, alpha: lora.alpha, dropout: lora.dropout, targetModules: lora.target_modules, seed: config.seed, baseDir: run.policyDir(state.policyVersion) });
      loraReady = true;
      log(`LoRA: rank ${info.rank}, alpha ${info.alpha} on ${info.adapters} projections: ${info.trainableParameters} trainable parameters, ${info.baseParameters} frozen (base policy v${state.policyVersion})`);
    };
    if (lora?.warm_start !== "full" || !config.warm_start) await attachLora();

    // PPO's critic starts as a copy of the policy's trunk, after the warm start so that it inherits what SFT learned.
    const initCritic = async (): Promise<void> => {
      if (advantageConfigOf(config).estimator !== "ppo" || criticReady) return;
      await requireCapability(trainer, "critic", 'advantage estimator "ppo"').criticInit({ fromPolicy: true });
      criticReady = true;
    };

    let warm: WarmStartReport | null = null;
    if (config.warm_start && !state.warmStartDone) {
      const { report, curve } = await warmStart(ctx, trainer, log);
      warm = report;
      timing.warmStart = report.wallMs / 1000;
      state = { ...state, policyVersion: state.policyVersion + 1, warmStartDone: true };
      await trainer.save(run.policyDir(state.policyVersion), { policyVersion: state.policyVersion });
      await initCritic();
      // With its optimizer state: a run resumed here continues exactly, and other runs can start from it (`model.checkpoint`).
      const checkpoint = run.checkpointDir(0);
      await trainer.saveCheckpoint(checkpoint, { policyVersion: state.policyVersion, extra: { step: 0, cursor: state.taskCursor } });
      state = await run.commit({ ...state, checkpoint }, { written: [run.policyDir(state.policyVersion), checkpoint], metrics: [...curve.map((p) => ({ phase: "sft", ...p })), { phase: "warm_start", step: 0, policy_version: state.policyVersion, ...report }], step: 0 });
      const opening = report.finalDemoOpeningProb === null ? "" : ` (their calls' first ${DEMO_OPENING_TOKENS} tokens: ${formatProbability(report.finalDemoOpeningProb)})`;
      const prob = report.finalDemoProb === null ? "" : `, demonstrations reproduced with probability ${formatProbability(report.finalDemoProb)}${opening}`;
      log(`warm start: ${report.steps}/${report.plannedSteps} SFT steps on ${report.trainableTokens} demonstration tokens, final NLL ${report.finalNll.toFixed(3)}${prob}`);
    }

    await attachLora();
    await initCritic();

    stack = await RolloutStack.open(runStackOptions(ctx, runEngine(ctx, { policyDir: run.policyDir(state.policyVersion) }), ctx.stores.rollouts));
    const engine = stack.engine;
    if (!isHotSwappable(engine)) throw new UserError("unsupported_weight_reload", `engine ${engine.spec} cannot switch policies between steps`);
    if (config.cluster) cluster = await ClusterSteps.open(ctx, engine, run.policyDir(state.policyVersion), log);
    const evalTasks: Task[] = config.eval ? (await loadSuite(config.eval.tasks)).tasks : [];
    // On a cluster, evaluations run on the nodes too (the current policy version, served to them first).
    const onCluster = (): ClusterEvaluation | undefined => (cluster ? { steps: cluster, version: state.policyVersion, policyDir: run.policyDir(state.policyVersion) } : undefined);
    // Local evaluations journal their results in the run directory: a kill mid-evaluation loses no finished rollout.
    const evalOptions = (label: string): EvaluateOptions => {
      const onNodes = onCluster();
      return onNodes ? { cluster: onNodes } : { journal: { path: run.evalJournalPath(label), policy: `v${state.policyVersion}` }, log };
    };

    let before: EvalSummary | null = null;
    if (config.eval?.before && !state.evalBeforeDone) {
      const t = Date.now();
      before = await evaluatePolicy(ctx, stack, evalTasks, "eval-before", evalOptions("eval-before"));
      timing.evalBefore = since(t);
      run.writeJson("eval-before.json", before);
      state = await run.commit({ ...state, evalBeforeDone: true }, { step: 0 });
      log(`held-out pass@1 before RL: ${(100 * before.overall.passAt1).toFixed(1)}%`);
    } else if (existsSync(run.path("eval-before.json"))) before = JSON.parse(readFileSync(run.path("eval-before.json"), "utf8")) as EvalSummary;

    const sampler = new TaskSampler((await loadSuite(config.tasks.train)).tasks, config.seed);
    const budget = config.budget;
    const progress = new Progress("train", budget.steps, { sink: run.progress });
    // A run resumed with every step done (only the last evaluation left) has no RL to show.
    if (state.step < budget.steps) progress.update(state.step, state.step > 0 ? `resumed at step ${state.step}` : "");
    else progress.close();
    // The cap is on the run's RL time over all its processes: a resume starts with what earlier ones used.
    const trainStart = Date.now() - state.trainMs;
    const outOfTime = (): boolean => budget.max_minutes !== undefined && Date.now() - trainStart > budget.max_minutes * 60_000;
    if (budget.max_minutes !== undefined && state.trainMs > 0 && state.step < budget.steps) {
      log(`budget.max_minutes ${budget.max_minutes}: ${(state.trainMs / 60_000).toFixed(1)} of them used by this run's RL before this resume`);
    }

    // Scheduled mix-harness mode: one harness per optimizer step, picked by the scheduler (state survives resume).
    const scheduler = ctx.scheduler;
    if (scheduler && state.scheduler !== undefined) scheduler.restore(state.scheduler);

    // A step's rollouts take minutes through a real CLI: their count goes to the terminal and progress.json.
    const stepProgress = (step: number, total: number): ((r: RolloutResult, done: number) => void) => {
      const p = new Progress(`step ${step} rollouts`, total, { everyMs: 30_000, sink: run.progress });
      // Shown from launch: a real CLI's first rollout takes minutes, and "0/24" says the step has started.
      p.update(0);
      let scores = 0;
      return (r, done) => {
        scores += r.score;
        p.update(done, `reward so far ${(scores / done).toFixed(3)}`);
      };
    };
    const onRetry = (failed: RolloutResult, n: number, of: number): void => log(retryLine(failed, n, of));
    // A step redone after a crash must not mix its new rollouts with the interrupted attempt's records.
    const attempt = newId("a", 6).slice(2);
    const launch = (step: number, cursor: number): Pending => {
      const take = sampler.take(cursor, budget.tasks_per_step);
      const choice = scheduler?.next(step) ?? null;
      const harnesses = choice ? [choice.harness] : config.harnesses;
      const startedAt = Date.now();
      const version = state.policyVersion;
      const seeds = (kind: "train" | "probe"): { samplingSeeds?: string } => (config.sampling.seeded ? { samplingSeeds: trainingSeedKey(config.seed, step, kind) } : {});
      const promise = cluster
        ? cluster.launch({ tasks: take.tasks, harnesses, samples: budget.samples, idPrefix: cluster.idPrefix(step), ...seeds("train") }, version, run.policyDir(version))
        : runRollouts(stack!, { tasks: take.tasks, harnesses, samples: budget.samples, idPrefix: `s${step}-${attempt}`, ...seeds("train") }, { concurrency: config.rollout.concurrency, settings: ctx.rolloutSettings, onResult: stepProgress(step, take.tasks.length * harnesses.length * budget.samples), onRetry });
      // Probe rollouts run after the step's own (they share the sandbox pool or the nodes), on the first tasks of the
      // same step, so probe and training sketches compare the same tasks through different harnesses. They take no task
      // cursor: the training data order is the same with or without probes. On a cluster they are jobs of the step
      // (ids under its prefix, so they land and are gathered like its own) sampling the same served version.
      const plan = scheduler?.probes ?? null;
      const probes =
        plan && (step - 1) % plan.every === 0
          ? promise.then(
              () => {
                const probePlan = { tasks: take.tasks.slice(0, plan.tasks), harnesses: [...plan.harnesses], samples: plan.samples ?? budget.samples, ...seeds("probe") };
                return cluster
                  ? cluster.launch({ ...probePlan, idPrefix: `${cluster.idPrefix(step)}-p` }, version, run.policyDir(version))
                  : runRollouts(stack!, { ...probePlan, idPrefix: `p${step}-${attempt}` }, { concurrency: config.rollout.concurrency, settings: ctx.rolloutSettings, onRetry });
              },
              // The step's own rollouts failed: that failure is the one reported (through `promise`).
              () => [],
            )
          : null;
      return { promise, cursor: take.cursor, startedAt, harness: choice?.harness ?? null, probes };
    };

    // KL regularisation is to the policy RL started from (after the warm start), held by a second worker.
    const referenceVersion = state.referenceVersion ?? state.policyVersion;
    state = { ...state, referenceVersion };
    if (config.algorithm.kl_coef > 0 && state.step < budget.steps) {
      reference = await openTrainer(ctx, "reference");
      await reference.load(run.policyDir(referenceVersion));
    }

    // The evaluation `eval.every` asks for after a step runs once that step is committed and commits on its own; a run
    // killed before that commit evaluates the same (committed) policy again when it resumes.
    const evalDue = (step: number): boolean => Boolean(config.eval?.every && step > 0 && step % config.eval.every === 0 && step < budget.steps);
    const midEval = async (step: number): Promise<void> => {
      const mid = await evaluatePolicy(ctx, stack!, evalTasks, `eval-${step}`, evalOptions(`eval-${step}`));
      const row = { phase: "eval", step, policy_version: state.policyVersion, time: Date.now(), "eval/pass1": mid.overall.passAt1, ...Object.fromEntries(Object.entries(mid.byHarness).map(([h, g]) => [`eval/pass1/${h}`, g.passAt1])) };
      faultPoint("after-eval", step);
      state = await run.commit({ ...state, evalStep: step }, { metrics: [row], step });
    };
    if (resumed && state.metricsBytes !== undefined && evalDue(state.step) && state.evalStep !== state.step) await midEval(state.step);

    let capoReady = capoRestored;
    // Where each step's prompt tokens came from (llama.cpp: evaluated, reused from the sequence, shared by another);
    // on a cluster the nodes' engines sample, not this one.
    const counter = countsPromptTokens(engine) && !cluster ? engine : null;
    let promptCounts: PromptTokenCounts = { ...(counter?.promptTokens ?? { evaluated: 0, reused: 0, shared: 0 }) };
    const promptMetrics = (): Record<string, number> => {
      if (!counter) return {};
      const now = { ...counter.promptTokens };
      const delta = { "engine/prompt_evaluated": now.evaluated - promptCounts.evaluated, "engine/prompt_reused": now.reused - promptCounts.reused, "engine/prompt_shared": now.shared - promptCounts.shared };
      promptCounts = now;
      return delta;
    };
    let pending = state.step < budget.steps && !outOfTime() ? launch(state.step + 1, state.taskCursor) : null;
    while (pending && state.step < budget.steps) {
      const step = state.step + 1;
      const waited = Date.now();
      const gathered = await pending.promise;
      const { results, metrics: clusterMetrics } = cluster ? cluster.admit(gathered, state.policyVersion) : { results: gathered, metrics: {} };
      const ownRolloutsDone = Date.now();
      const probeResults = pending.probes ? await pending.probes : null;
      timing.rollouts += since(waited);
      // The step's own rollouts; probe rollouts (after them) are timed as time/probe_rollout_s.
      const rolloutSeconds = (ownRolloutsDone - pending.startedAt) / 1000;
      const probeRolloutSeconds = (Date.now() - ownRolloutsDone) / 1000;
      const cursor = pending.cursor;
      const harness = pending.harness;
      // Async: the next step's rollouts run (on the current policy) while this step trains.
      pending = config.mode === "async" && step < budget.steps && !outOfTime() ? launch(step + 1, cursor) : null;
      const t0 = Date.now();
      // CAPO partitions live in the worker (and in its checkpoints); probe when there are none or on schedule.
      const capoOptions = config.capo?.enabled ? { probe: !capoReady || (step - 1) % config.capo.reprobe_every === 0, hasPartitions: capoReady } : null;
      // Probe sketches first: the same weights as the training step's sketch, and their gradients are dropped before
      // the training step accumulates its own.
      const probes = scheduler?.probes ?? null;
      const sketchOptions = scheduler?.sketchOptions ?? null;
      const probeMetrics = scheduler && probes && probeResults && sketchOptions ? await probeStep(scheduler, probes, cluster?.store ?? stack.store, probeResults, trainer, config, state.policyVersion, { sketch: sketchOptions, reference, rolloutSeconds: probeRolloutSeconds }) : {};
      const trained = await trainOnRollouts(cluster?.store ?? stack.store, results, trainer, config, state.policyVersion, { sketch: scheduler?.sketchOptions ?? null, capo: capoOptions, step, reference });
      if (trained.metrics["capo/probed"] === 1) capoReady = true;
      const m = trained.metrics;
      if (scheduler && harness) {
        scheduler.update({ harness, learnability: trained.learnability, ...(trained.sketch ? { sketch: trained.sketch } : {}) });
        Object.assign(m, scheduler.log());
      }
      const trainSeconds = (Date.now() - t0) / 1000;
      timing.train += trainSeconds;
      const t1 = Date.now();
      const version = state.policyVersion + 1;
      await trainer.save(run.policyDir(version), { policyVersion: version });
      await engine.loadPolicy(run.policyDir(version), version);
      await cluster?.publish(run.policyDir(version), version);
      const checkpoint = run.checkpointDir(step);
      await trainer.saveCheckpoint(checkpoint, { policyVersion: version, extra: { step, cursor } });
      const swapSeconds = since(t1);
      timing.swap += swapSeconds;

      const byHarness: Record<string, number> = {};
      for (const h of new Set(results.map((r) => r.harness))) {
        const own = results.filter((r) => r.harness === h && r.status !== "infra_error");
        byHarness[`pass1/${h}`] = own.length ? own.filter((r) => r.status === "ok").length / own.length : 0;
      }
      const valid = results.filter((r) => r.status !== "infra_error");
      const statuses: Record<string, number> = {};
      for (const r of results) statuses[`status/${r.status}`] = (statuses[`status/${r.status}`] ?? 0) + 1;
      const row = {
        phase: "rl",
        step,
        policy_version: version,
        time: Date.now(),
        "reward/mean": valid.length ? valid.reduce((s, r) => s + r.score, 0) / valid.length : 0,
        ...byHarness,
        ...statuses,
        ...m,
        ...probeMetrics,
        ...clusterMetrics,
        ...promptMetrics(),
        "time/rollout_s": rolloutSeconds,
        "time/train_s": trainSeconds,
        "time/swap_s": swapSeconds,
        "throughput/rollouts_per_s": results.length / Math.max(rolloutSeconds, 1e-3),
        "throughput/trainable_tokens_per_s": (m["tokens/trainable"] ?? 0) / Math.max(trainSeconds, 1e-3),
      };
      // One commit: the new policy version, its checkpoint and this metrics line become the run's state together; the
      // previous checkpoint and retired policy versions are deleted only after the switch.
      const next: RunState = { ...state, step, policyVersion: version, taskCursor: cursor, checkpoint, trainMs: Date.now() - trainStart, ...(scheduler ? { scheduler: scheduler.state() } : {}) };
      // rollouts.jsonl gets the step's results with its commit (not as they finish): a redone step never appears twice.
      state = await run.commit(next, { written: [run.policyDir(version), checkpoint], metrics: [row], rollouts: results, ...(probeResults?.length ? { probes: probeResults } : {}), step });
      if (evalDue(step)) {
        await midEval(step);
        promptMetrics(); // the evaluation's prompts are not the next step's
      }
      writeReport(run.root);
      progress.update(step, `reward ${row["reward/mean"].toFixed(3)} v${version}`);
      if (outOfTime() && step < budget.steps) {
        log(`budget.max_minutes ${budget.max_minutes} reached (RL time of this run, resumes included): RL stops after ${step} of ${budget.steps} planned steps`);
        progress.close();
        break;
      }
      if (!pending && config.mode === "sync" && step < budget.steps) pending = launch(step + 1, cursor);
    }
    if (pending) await Promise.all([pending.promise, pending.probes]).catch(() => undefined);
    // The loop ends early only on the time cap (failures throw); say so in the summary rather than report a shorter run as planned.
    const timeCapped = state.step < budget.steps;

    let after: EvalSummary | null = null;
    if (config.eval?.after) {
      const t = Date.now();
      after = await evaluatePolicy(ctx, stack, evalTasks, "eval-after", evalOptions("eval-after"));
      timing.evalAfter = since(t);
      run.writeJson("eval-after.json", after);
      log(`held-out pass@1 after RL: ${(100 * after.overall.passAt1).toFixed(1)}%`);
    }
    const beforeTable = before ? passTable(before) : null;
    const afterTable = after ? passTable(after) : null;
    const summary: RunSummary = {
      name: config.name,
      runDir: run.root,
      steps: state.step,
      plannedSteps: budget.steps,
      timeCapped,
      policyVersion: state.policyVersion,
      wallSeconds: (Date.now() - started) / 1000,
      trainSeconds: state.trainMs / 1000,
      before: beforeTable,
      after: afterTable,
      delta: before && after ? passDelta(before, after) : null,
      warmStart: warm,
      timing,
    };
    run.writeJson("summary.json", summary);
    writeReport(run.root);
    return summary;
  } finally {
    await cluster?.close().catch(() => undefined);
    await stack?.close().catch(() => undefined);
    await reference?.close().catch(() => undefined);
    await trainer.close().catch(() => undefined);
  }
}
