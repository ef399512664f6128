import { copyFileSync, existsSync, renameSync, writeFileSync } from "node:fs";
import { checkRunConfigNames } from "./check-names.js";
import { parseEngineSpec, type EngineSpec } from "../engine/spec.js";
import type { SamplingParams } from "../engine/types.js";
import { ORACLE_ENGINE } from "../rollout/oracle/register.js";
import type { RolloutSettings } from "../rollout/run-one.js";
import type { StackOptions } from "../rollout/stack.js";
import { createScheduler, type HarnessScheduler } from "../schedule/index.js";
import { errorMessage } from "../core/errors.js";
import { loadRunConfig, type RunConfig } from "../train/config.js";
import { configChanges } from "../train/config-diff.js";
import { RunDir } from "../train/run-dir.js";
import { rolloutSettings } from "../train/settings.js";
import { createTrainer } from "../trainer/index.js";
import type { DistributedOptions, Trainer, TrainerOptions } from "../trainer/types.js";
import { policyOfConfig, policyOfEngine, servePolicy, type Policy, type TrainedPolicy } from "./policy.js";

/** Which trainer backend, and the options of each worker a run starts. */
export interface TrainerPlan {
  /** Trainer registry name, e.g. `torch`. */
  kind: string;
  /** The policy's worker. */
  policy: TrainerOptions;
  /** The reference policy's worker (`algorithm.kl_coef` > 0). */
  reference: TrainerOptions;
}

/**
 * Everything a training run is composed of, built once from a validated config and a run directory, and handed to
 * the orchestrator, warm start, RL step, evaluation and rollout stacks, which build none of it themselves.
 */
export interface RunContext {
  readonly config: RunConfig;
  readonly run: RunDir;
  readonly policy: TrainedPolicy;
  readonly trainer: TrainerPlan;
  /** Store specs: the RL rollouts' call records and the warm start's demonstrations. */
  readonly stores: { rollouts: string; demos: string };
  /** The harness scheduler (mix: scheduled), else null. Its state is restored by the orchestrator on resume. */
  readonly scheduler: HarnessScheduler | null;
  /** Rollout runner settings of the run (training and evaluation; the warm start overrides a few). */
  readonly rolloutSettings: Partial<RolloutSettings>;
  /**
   * A resumed run whose config is not the one in its run directory: where the two differ (`path: old → new`) and
   * where the previous config was kept. The run continues with the new one; the orchestrator says so.
   */
  readonly configChange?: { changes: readonly string[]; previous: string };
}

export interface RunPaths {
  /** The run directory (created if missing). */
  runDir: string;
  /** The config file, copied into the run directory on first start; null when the config came as an object. */
  configPath?: string | null;
  /** The config as the run was given it (the file with `--set` overrides applied): written instead of the file's text. */
  configText?: string;
}

/**
 * Builds a run's context. Checks that every name the config uses exists, loads the policy's codec and builds the
 * scheduler; starts no process.
 */
export function buildRunContext(config: RunConfig, paths: RunPaths): RunContext {
  checkRunConfigNames(config);
  const run = new RunDir(paths.runDir);
  const configChange = paths.configPath ? adoptConfig(run, paths.configPath, config, paths.configText) : undefined;
  const t = config.trainer;
  const device = { ...(t.device === undefined ? {} : { device: t.device }), ...(t.autocast === "off" ? {} : { autocast: t.autocast }) };
  const layout = trainerLayout(t);
  return {
    config,
    run,
    policy: policyOfConfig(config),
    trainer: { kind: t.kind, policy: { ...device, threads: t.threads, ...layout.policy }, reference: { ...device, threads: t.reference_threads, ...layout.reference } },
    stores: { rollouts: run.storeSpec, demos: run.demoStoreSpec },
    scheduler: config.mix === "scheduled" && config.scheduler ? createScheduler(config.scheduler, config.harnesses, config.seed) : null,
    rolloutSettings: rolloutSettings(config),
    ...(configChange ? { configChange } : {}),
  };
}

/**
 * Copies the config into the run directory on first start. On a resume with a config that differs (after
 * validation and defaults: comments and formatting do not count) the run's copy becomes `config.<n>.yaml` and the
 * new one takes its place, so config.yaml is always what the run continues with and nothing of the history is lost.
 */
function adoptConfig(run: RunDir, configPath: string, config: RunConfig, text: string | undefined): RunContext["configChange"] {
  const write = (): void => (text === undefined ? copyFileSync(configPath, run.configPath) : writeFileSync(run.configPath, text));
  if (!existsSync(run.configPath)) {
    write();
    return undefined;
  }
  let changes: string[];
  try {
    changes = configChanges(loadRunConfig(run.configPath), config);
  } catch (e) {
    changes = [`(the run's config.yaml does not load: ${errorMessage(e).slice(0, 200)})`];
  }
  if (changes.length === 0) return undefined;
  let n = 1;
  while (existsSync(run.path(`config.${n}.yaml`))) n++;
  const previous = run.path(`config.${n}.yaml`);
  renameSync(run.configPath, previous);
  write();
  return { changes, previous };
}

/**
 * The ranks of the policy's and the reference policy's workers. The reference scorer (KL) splits its batches the
 * same way over this machine's ranks; it does not reach other machines (their ranks belong to the policy's layout,
 * started by hand on the master port), so it takes a free local port of its own.
 */
function trainerLayout(t: RunConfig["trainer"]): { policy: Pick<TrainerOptions, "distributed">; reference: Pick<TrainerOptions, "distributed"> } {
  if (t.world_size <= 1) return { policy: {}, reference: {} };
  const local = t.local_ranks ?? t.world_size;
  const policy: DistributedOptions = { worldSize: t.world_size, localRanks: local };
  if (t.master_addr !== undefined) policy.masterAddr = t.master_addr;
  if (t.master_port !== undefined) policy.masterPort = t.master_port;
  return { policy: { distributed: policy }, reference: local > 1 ? { distributed: { worldSize: local, localRanks: local } } : {} };
}

/** Starts one of the run's trainer workers. */
export function openTrainer(ctx: RunContext, role: "policy" | "reference"): Promise<Trainer> {
  return createTrainer(ctx.trainer.kind, ctx.trainer[role]);
}

/** The engine that serves the RL policy whose weights are in `modelDir`, or the oracle for demonstrations. */
export function runEngine(ctx: RunContext, purpose: { policyDir: string } | "oracle"): EngineSpec {
  return purpose === "oracle" ? { kind: ORACLE_ENGINE, target: "", options: {} } : servePolicy(ctx.policy, purpose.policyDir);
}

/** A rollout stack of the run: the given engine with the policy's codec, the run's sandboxes and sampling. */
export function runStackOptions(ctx: RunContext, engine: EngineSpec, store: string, options: { sampling?: boolean } = {}): StackOptions {
  const c = ctx.config;
  return {
    engine,
    codec: ctx.policy.codec,
    store,
    sandbox: c.rollout.sandbox,
    sandboxPool: c.rollout.concurrency,
    ...(options.sampling === false ? {} : { sampling: { temperature: c.sampling.temperature, maxTokens: c.sampling.max_tokens, topK: c.sampling.top_k } }),
  };
}

/** A rollout or evaluation job of the CLI (`harnessrl rollout|eval`): a policy served as given, no training. */
export interface RolloutJobContext {
  readonly policy: Policy;
  readonly stack: StackOptions;
  readonly concurrency: number;
  readonly rolloutSettings: Partial<RolloutSettings>;
}

export interface RolloutJobOptions {
  /** The CLI's `--engine` text (`kind:target?options`), parsed here once. */
  engine: string;
  modelDir?: string;
  store: string;
  sandbox: string;
  concurrency: number;
  sampling: Partial<SamplingParams>;
  rolloutSettings: Partial<RolloutSettings>;
}

/** Builds a rollout job's context the way `buildRunContext` builds a run's: the policy's codec goes to the engine. */
export function buildRolloutJobContext(o: RolloutJobOptions): RolloutJobContext {
  const policy = policyOfEngine(parseEngineSpec(o.engine), o.modelDir);
  return {
    policy,
    // Without --model-dir the engine's own model (if any) decides the codec; scripted/oracle use the byte codec.
    stack: { engine: policy.engine, ...(policy.modelDir ? { codec: policy.codec } : {}), store: o.store, sandbox: o.sandbox, sandboxPool: o.concurrency, sampling: o.sampling },
    concurrency: o.concurrency,
    rolloutSettings: o.rolloutSettings,
  };
}
