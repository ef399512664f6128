import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { advantageSectionSchema } from "../advantage/config.js";
import { UserError, errorMessage } from "../core/errors.js";
import { MEMORY_MB_MAX, MEMORY_MB_MIN } from "../sandbox/options.js";
import { schedulerConfigSchema } from "../schedule/config.js";
import { ROW_TOKEN_BUDGET } from "./batches.js";
import { issueLines } from "./config-issues.js";
import { applyOverrides, type ConfigOverride } from "./config-overrides.js";
import { lrScheduleSchema } from "./lr-schedule.js";

/**
 * One YAML file describes a run, and this schema checks all of it before anything runs: every section is typed here
 * (sections owned by other modules, `advantage` and `scheduler`, are imported), keys are snake_case, unknown keys are
 * errors (a typo must not silently fall back to a default), and each default is written once, on its field (sections
 * use `.prefault({})` so an absent section gets its fields' defaults).
 */
/** The projections LoRA may adapt (HF module names); all of them by default. */
export const LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"] as const;

/**
 * `model.lora`: train low-rank adapters on a frozen base instead of every weight (docs/training.md, LoRA). Each policy
 * version is saved merged (what llama.cpp serves) with the adapter beside it in the PEFT layout (`adapter/`).
 */
const loraSchema = z.strictObject({
  rank: z.number().int().positive().default(8),
  /** The update is (alpha / rank) · B A. */
  alpha: z.number().positive().default(16),
  /** Dropout on the adapter branch while training (0: the trained policy is the sampled one, as RL wants). */
  dropout: z.number().min(0).lt(1).default(0),
  target_modules: z.array(z.enum(LORA_TARGETS)).min(1).default([...LORA_TARGETS]),
  /**
   * `lora`: the warm start trains the adapters too. `full`: the warm start fine-tunes every weight and the adapters
   * start on its result (a preset made from scratch has nothing for a low-rank update to adapt).
   */
  warm_start: z.enum(["lora", "full"]).default("lora"),
});

const modelSchema = z.union([
  z.strictObject({ preset: z.string().min(1), seed: z.number().int().default(0), model_type: z.enum(["qwen2", "qwen3"]).optional(), lora: loraSchema.optional() }),
  /** A model directory: weights only, so training starts with a fresh optimizer (warm the lr up: `lr_schedule`). */
  z.strictObject({ dir: z.string().min(1), lora: loraSchema.optional() }),
  /** Another run's trainer checkpoint (e.g. its warm start, `checkpoints/step-0000`): weights, optimizer, critic, RNG. */
  z.strictObject({ checkpoint: z.string().min(1), lora: loraSchema.optional() }),
]);

export type LoraConfig = z.infer<typeof loraSchema>;

/** How the policy is served during RL; the run context turns it into a structured engine spec (src/run/). */
const engineSchema = z
  .strictObject({
    kind: z.enum(["llamacpp", "llamacpp-http", "vllm", "sglang"]).default("llamacpp"),
    /** vllm / sglang / llamacpp-http (`harnessrl serve`): the server's base URL. */
    url: z.string().url().optional(),
    /** llama.cpp threads per sequence; default: the engine's (cores − 1), since harness processes share the CPU. */
    threads: z.number().int().positive().optional(),
    sequences: z.number().int().positive().default(16),
    /** llama.cpp: one context per sequence (`isolated`) or sequences decoded in one batch (`shared`); docs/engines.md. */
    batch: z.enum(["isolated", "shared"]).optional(),
    /** llama.cpp `batch: shared`: the sequences are spread over this many shared contexts, decoded in parallel. */
    contexts: z.number().int().positive().optional(),
    /**
     * Tokens one sequence holds (prompt + completion). llama.cpp allocates this much KV cache per sequence; default
     * min(8192, the model's max_position_embeddings). Real harnesses need more: Claude Code's first prompt alone is
     * 12–18k Qwen3 tokens (docs/engines.md). vllm / sglang: the context window the proxy reports.
     */
    context_size: z.number().int().min(256).max(1 << 20).optional(),
    /**
     * llama.cpp: a prompt prefix of at least this many new tokens is evaluated once and loaded by the other sequences
     * whose prompts start with it (a GRPO group's sessions, a harness's system prompt across tasks); 0 turns it off.
     * Default 1024 (docs/engines.md, "Shared prompt prefixes").
     */
    share_prefix: z.number().int().min(0).optional(),
    /**
     * vllm: the deployment hook that makes the server serve a new policy version (POSTed `{model_path, version}`;
     * vLLM has no standard reload endpoint, docs/engines.md). Without it a full-weight run cannot switch policies.
     */
    reload_url: z.string().url().optional(),
  })
  .prefault({})
  .superRefine((e, ctx) => {
    if (e.kind !== "llamacpp" && !e.url) ctx.addIssue({ code: "custom", path: ["url"], message: `engine kind ${e.kind} needs the server's url` });
    if (e.share_prefix !== undefined && e.kind !== "llamacpp") ctx.addIssue({ code: "custom", path: ["share_prefix"], message: `share_prefix is the embedded llama.cpp engine's; vLLM and SGLang cache prefixes themselves` });
    if (e.reload_url !== undefined && e.kind !== "vllm") ctx.addIssue({ code: "custom", path: ["reload_url"], message: `reload_url is vLLM's deployment hook; engine kind ${e.kind} reloads through its own API` });
  });

/** The training backend: one worker for the policy and, with `algorithm.kl_coef` > 0, one for the reference policy. */
const trainerSchema = z
  .strictObject({
    /** Trainer registry name (`harnessrl list`): `torch`, the local PyTorch worker. */
    kind: z.string().min(1).default("torch"),
    /** The backend's device: cpu, cuda, cuda:N (torch default: cuda when available). */
    device: z.string().min(1).optional(),
    /** CPU threads of the policy's worker (the tiny presets' measured best on 2 cores). */
    threads: z.number().int().positive().default(2),
    /** CPU threads of the reference policy's worker (`algorithm.kl_coef`): it only scores, once per micro-batch. */
    reference_threads: z.number().int().positive().default(1),
    /** Mixed precision of the trainer workers: bf16 = torch.autocast(bfloat16) with float32 master weights (meant for CUDA). */
    autocast: z.enum(["off", "bf16"]).default("off"),
    /**
     * Data-parallel ranks (torch.distributed: gloo on CPU, nccl on CUDA; docs/worker.md#ranks). `threads` is per rank.
     * 1 = one worker process.
     */
    world_size: z.number().int().min(1).max(1024).default(1),
    /** Ranks started on this machine, rank 0 included (default: all); the others are started on their machines. */
    local_ranks: z.number().int().min(1).optional(),
    /** Rank 0's address as the other machines reach it (default 127.0.0.1). */
    master_addr: z.string().min(1).optional(),
    /** Rendezvous port; required with ranks on other machines (default: a free local port). */
    master_port: z.number().int().min(1).max(65535).optional(),
  })
  .prefault({})
  .superRefine((t, ctx) => {
    const local = t.local_ranks ?? t.world_size;
    if (local > t.world_size) ctx.addIssue({ code: "custom", path: ["local_ranks"], message: `local_ranks (${local}) exceeds world_size (${t.world_size})` });
    if (local < t.world_size && t.master_port === undefined) ctx.addIssue({ code: "custom", path: ["master_port"], message: "ranks on other machines need an explicit master_port (and master_addr)" });
  });

const samplingSchema = z
  .strictObject({
    temperature: z.number().positive().default(1),
    max_tokens: z.number().int().positive().default(128),
    /**
     * Sample from the K most likely tokens only (0, the default: the whole distribution). The engine then reports each
     * token's probability renormalised over those K, which is the probability it was drawn with, so the importance
     * ratio stays exact on that support; the engine/trainer mismatch metric shows the mass left out (−log of the top
     * K's share), and tokens outside the top K are never sampled. Why offer it: llama.cpp as pinned here sorts every
     * candidate to sample from the whole distribution, which for Qwen3's 151,936 tokens costs ~12 ms per token on
     * this machine, 4–5× the model itself (docs/engines.md, "Sampling cost").
     */
    top_k: z.number().int().min(0).max(1_000_000).default(0),
    /**
     * Seeded training rollouts: each step's rollouts sample with seeds derived from the run's `seed`, the step and the
     * rollout's (task, harness, sample), as evaluations do (src/proxy/sampling-seeds.ts). A run repeated from the same
     * state then samples the same tokens wherever its policy is the same, so it reproduces (on CPU, where the trainer
     * and llama.cpp are deterministic) and two recipes started from one checkpoint draw common random numbers: their
     * difference carries less sampling noise. Every rollout still gets seeds of its own. false: a random seed per call.
     */
    seeded: z.boolean().default(false),
  })
  .prefault({});

const rolloutSchema = z
  .strictObject({
    sandbox: z.string().default("bwrap"),
    concurrency: z.number().int().positive().default(8),
    max_turns: z.number().int().positive().default(4),
    timeout_s: z.number().positive().default(90),
    /** The sandbox memory limit (MiB); on a cluster it travels with each job (bounded as a job's is). */
    memory_mb: z.number().int().min(MEMORY_MB_MIN).max(MEMORY_MB_MAX).default(1024),
    /**
     * Attempts per rollout on this machine while attempts end in a retryable infrastructure error (a sandbox or its
     * exec agent that failed under load): lost rollouts leave their group's advantages and unpair evaluations. The
     * policy's own failures (timeouts, crashes, wrong answers) are never retried. On a cluster, `cluster.attempts`.
     */
    attempts: z.number().int().min(1).max(10).default(3),
  })
  .prefault({});

/**
 * Rollouts on a cluster of rollout nodes (`harnessrl node`, docs/cluster.md): the queue they pull from, the central
 * store they ship records to, and the engine endpoints they sample from. Absent: everything runs in this process.
 */
const clusterSchema = z.strictObject({
  /** The queue's Redis: redis://:<password>@<host>:<port>. */
  queue: z.string().min(1),
  /** The central record store nodes ship finished rollouts to (postgres://… for machines that share no disk). */
  store: z.string().min(1),
  /** Engine specs the nodes sample from (e.g. vllm:http://10.0.0.5:8000); jobs are spread over them round-robin. */
  engines: z.array(z.string().min(1)).min(1).optional(),
  /** Attempts per rollout job before it goes to the failed set and its step proceeds without it. */
  attempts: z.number().int().min(1).max(20).default(3),
});

/**
 * `warm_start.stop_at_pass_rate`: stop SFT once the policy's own held-in pass@1 reaches `target` (src/train/pass-rate-check.ts).
 * Each check saves the policy, serves it on the run's engine and runs one rollout per task of `tasks` and training
 * harness (at the run's sampling settings, the same random numbers at every check). Checks begin once the
 * demonstrations' reproduction probability (`sft/demo_prob`, free) reaches `from_demo_prob`, then repeat every
 * `every_steps` optimizer steps: a check costs rollouts, the gate keeps them to the end of SFT where the pass rate moves.
 */
const passRateStopSchema = z.strictObject({
  target: z.number().gt(0).lte(1),
  /** Held-in tasks (a suite spec, not the evaluation's held-out suite: the stop must not see the test tasks). */
  tasks: z.string().min(1),
  every_steps: z.number().int().positive().default(6),
  from_demo_prob: z.number().gt(0).lt(1).default(0.03),
});

export type PassRateStop = z.infer<typeof passRateStopSchema>;

const warmStartSchema = z.strictObject({
  /** Oracle demonstrations: a task suite spec solved by the oracle engine through every training harness. */
  demos: z.string().min(1),
  epochs: z.number().int().positive().default(4),
  lr: z.number().positive().default(3e-3),
  /** Tokens per optimizer step (rows are packed trees). */
  batch_tokens: z.number().int().positive().default(8192),
  /**
   * Tokens per packed demonstration row (default: `algorithm.row_tokens`). Smaller rows give more optimizer steps per
   * epoch for fewer shared prompts per row: SFT progress here is per step, so smaller rows reach a given NLL in less
   * compute (docs/training.md, the quickstart's warm start).
   */
  row_tokens: z.number().int().positive().optional(),
  lr_schedule: lrScheduleSchema,
  /**
   * Stop after this many seconds of SFT (at an optimizer-step boundary); the schedule still spans every epoch. A cap
   * that hits is logged and reported (summary `warmStart.timeCapped`): the policy is then weaker than configured.
   */
  max_seconds: z.number().positive().optional(),
  /**
   * With `max_seconds`: fit the decay to the time, not to the planned steps. Before each step the schedule's horizon
   * becomes the steps that still fit before the cap at the mean step time so far (never growing back), so a capped
   * warm start ends annealed instead of being cut near its peak rate. A `stop_at_*` target that ends SFT first ends
   * it at whatever rate the fitted schedule had reached.
   */
  fit_schedule_to_time: z.boolean().default(false),
  /**
   * Stop SFT once the mean NLL per token over the last epoch's steps (a running mean over as many steps as an epoch
   * has) is at or below this value, checked from the second epoch on. The warm start's strength, not its step count,
   * decides how much room RL has: at temperature 1 over ~100 sampled tokens, held-out pass@1 ≈ exp(−100 · NLL), so
   * 0.012 leaves ~30 % (docs/training.md). Independent of the machine's speed, unlike `max_seconds`.
   */
  stop_at_nll: z.number().positive().optional(),
  /**
   * Stop SFT once the demonstrations' mean reproduction probability (`sft/demo_prob`: the mean over demonstrations of
   * exp(Σ log π) over each one's sampled tokens, from the trainer's own logprobs) is at or above this value, checked
   * from the end of the first epoch on. It aims at the quantity RL starts from (a temperature-1 success probability
   * per task) rather than at the mean token NLL, whose relation to pass@1 depends on how the NLL is spread over
   * demonstrations. With `stop_at_nll` as well, whichever is reached first stops SFT.
   */
  stop_at_demo_prob: z.number().gt(0).lt(1).optional(),
  /** Stop SFT once held-in pass@1 reaches a target, measured with rollouts near the end of SFT (passRateStopSchema). */
  stop_at_pass_rate: passRateStopSchema.optional(),
  /**
   * With a stop target (`stop_at_nll` / `stop_at_demo_prob` / `stop_at_pass_rate`): when `epochs` end before the target is reached, SFT
   * goes on, epoch by epoch at the schedule's final rate, until it is reached or `max_epochs` epochs are done. SFT can
   * sit on a loss plateau for a seed-dependent number of steps; a fixed schedule that ends on the plateau hands RL a
   * policy that solves nothing (docs/training.md). Default: `epochs` (no extension).
   */
  max_epochs: z.number().int().positive().optional(),
});

/** The policy loss and its optimizer. The estimator (GRPO/PPO), its normalisation and the loss aggregation are `advantage`. */
const algorithmSchema = z
  .strictObject({
    clip_low: z.number().positive().default(0.2),
    clip_high: z.number().positive().default(0.28),
    is_mode: z.enum(["truncate", "mask", "none"]).default("truncate"),
    tis_cap: z.number().positive().default(2),
    entropy_coef: z.number().min(0).default(0),
    kl_coef: z.number().min(0).default(0),
    lr: z.number().positive().default(1e-3),
    lr_schedule: lrScheduleSchema,
    weight_decay: z.number().min(0).default(0),
    /**
     * AdamW's β1 and β2 for RL's optimizer steps (the warm start keeps 0.9 / 0.999). A warm start's optimizer state is
     * continued with them: the step count and the second moment go on, β1 sets how much of the last steps' direction
     * each step carries.
     */
    betas: z.tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)]).default([0.9, 0.999]),
    max_grad_norm: z.number().min(0).default(1),
    /**
     * Optimizer steps per training step: the batch's rows are split into this many minibatches of about equal
     * trainable tokens, each with its own AdamW step (PPO-style; the clip and importance weights keep later
     * minibatches tied to the sampling policy). 1 = one step on the whole batch. Rows are not cut, so a batch of
     * fewer rows takes fewer steps (`train/minibatches` reports how many).
     */
    minibatches: z.number().int().positive().default(1),
    /** Tokens per forward/backward micro-batch (gradients accumulate within a minibatch). */
    batch_tokens: z.number().int().positive().default(16_384),
    /**
     * Tokens per packed row (also for the warm start). Trees share root context (system prompt, task) only inside a
     * row, so rows must hold a group's trees for that sharing: real harnesses' prompts are tens of thousands of tokens.
     */
    row_tokens: z.number().int().positive().default(ROW_TOKEN_BUDGET),
    /** PPO (`advantage.estimator: ppo`) only: the critic's learning rate. */
    critic_lr: z.number().positive().default(1e-3),
    /**
     * PPO only: the critic's gradient-norm clip (0 = none). Unset, the critic shares `max_grad_norm`; a policy clip
     * tuned to policy-gradient norms (the quickstart's 0.05) would also hold back the critic's value-regression
     * gradients, which are on another scale.
     */
    critic_max_grad_norm: z.number().nonnegative().optional(),
    /**
     * Before RL's first optimizer step, reset the policy optimizer's state continued from a warm start or a
     * `model.checkpoint`: `first_moment` zeroes AdamW's first moment only (RL's first updates no longer continue the
     * warm start's last ones; the second moment and the step count go on), `all` starts a fresh AdamW. Applied once,
     * in RL step 1 (a resumed run's checkpoints already hold the reset state).
     */
    reset_optimizer: z.enum(["none", "first_moment", "all"]).default("none"),
    /**
     * Which of a rollout's conversations RL and the warm start train: `all` (every call the harness made, with the
     * rollout's reward) or `main` (the agent's own conversation: side conversations such as Qwen Code's memory agent
     * or title generation, sub-agents and compactions still run and are recorded, but leave the batch). Trees are
     * labelled by lineage (src/trees/session-tree.ts), so a side conversation's own rewrites stay side. Under
     * `advantage.aggregation: token-mean` fewer tokens in the batch means more weight per token: switching to `main`
     * where side conversations held most tokens is a larger step at the same lr (docs/training.md, Qwen Code).
     */
    trajectories: z.enum(["all", "main"]).default("all"),
  })
  .prefault({});

const budgetSchema = z
  .strictObject({
    steps: z.number().int().min(0).default(10),
    tasks_per_step: z.number().int().positive().default(8),
    samples: z.number().int().min(2).default(4),
    /**
     * Stop starting new steps after this many minutes of training (the final evaluation still runs), counted over every
     * process of the run (a resume continues the count). A cap that hits is logged and reported (summary
     * `timeCapped`, `steps` < `plannedSteps`); budget by `steps` where the result matters.
     */
    max_minutes: z.number().positive().optional(),
  })
  .prefault({});

const evalSchema = z
  .strictObject({
    tasks: z.string().min(1),
    harnesses: z.array(z.string().min(1)).optional(),
    samples: z.number().int().positive().default(1),
    before: z.boolean().default(true),
    after: z.boolean().default(true),
    /** Also evaluate every N steps (0 = never). */
    every: z.number().int().min(0).default(0),
    temperature: z.number().positive().optional(),
    /**
     * Common random numbers: every evaluation of the run gives each rollout (task, harness, sample) the same sampling
     * seeds, so the evaluations before and after RL (and every `every`) sample the same tokens wherever the policies
     * agree, and the paired change carries less sampling noise at no cost; each evaluation alone is still an ordinary
     * sample of pass@1 (docs/training.md). false: a random seed per call.
     */
    common_random_numbers: z.boolean().default(true),
  });

export const runConfigSchema = z.strictObject({
  name: z.string().min(1).default("run"),
  seed: z.number().int().default(0),
  model: modelSchema,
  trainer: trainerSchema,
  engine: engineSchema,
  sampling: samplingSchema,
  rollout: rolloutSchema,
  harnesses: z.array(z.string().min(1)).min(1),
  tasks: z.strictObject({ train: z.string().min(1) }),
  warm_start: warmStartSchema.optional(),
  algorithm: algorithmSchema,
  /**
   * The estimator (grpo | ppo) and how rewards become token advantages and loss weights: grouping, std normalisation,
   * zero-variance groups, negative scaling, aggregation, process rewards, PPO γ/λ (src/advantage/config.ts).
   */
  advantage: advantageSectionSchema.prefault({}),
  /**
   * Mix-harness training: `mixed` — every step spans all `harnesses` (GRPO groups are (task, harness)); `single` —
   * exactly one harness; `scheduled` — one harness per optimizer step, chosen by `scheduler` (round-robin, uniform,
   * harness-bandit; src/schedule/config.ts).
   */
  mix: z.enum(["mixed", "single", "scheduled"]).default("mixed"),
  scheduler: schedulerConfigSchema.optional(),
  /**
   * Which agent roles' sampled tokens are trained (records carry the role that made each call). Default: every role
   * ("joint"). Multi-agent central-only training: `[central]` — sub-agent calls are still served by the same engine
   * but contribute no gradient.
   */
  train_roles: z.array(z.string().min(1)).min(1).optional(),
  /** CAPO (Harness-RL): route action-token and args-token gradients to the MLP units tied to each. */
  capo: z
    .strictObject({
      enabled: z.boolean().default(true),
      /** Fraction of MLP units per layer kept in each partition. */
      top_fraction: z.number().gt(0).max(1).default(0.25),
      /** Re-probe the partitions every K steps (on that step's successful trajectories). */
      reprobe_every: z.number().int().positive().default(5),
    })
    .optional(),
  mode: z.enum(["sync", "async"]).default("sync"),
  /** Async mode: rollouts sampled by a policy at most this many versions behind the one being trained are used. */
  max_staleness: z.number().int().min(0).default(1),
  budget: budgetSchema,
  eval: evalSchema.optional(),
  cluster: clusterSchema.optional(),
});

export type RunConfig = z.infer<typeof runConfigSchema>;

const checkedSchema = runConfigSchema.superRefine((c, ctx) => {
  if (c.mix === "single" && c.harnesses.length !== 1) ctx.addIssue({ code: "custom", path: ["harnesses"], message: "mix: single needs exactly one harness" });
  if (c.mix === "scheduled" && !c.scheduler) ctx.addIssue({ code: "custom", path: ["scheduler"], message: "mix: scheduled needs a scheduler section (name: round-robin | uniform | harness-bandit)" });
  if (c.model.lora && c.capo?.enabled) ctx.addIssue({ code: "custom", path: ["capo"], message: "capo partitions full MLP weights; it cannot be combined with model.lora" });
  if (c.model.lora && new Set(c.model.lora.target_modules).size !== c.model.lora.target_modules.length) ctx.addIssue({ code: "custom", path: ["model", "lora", "target_modules"], message: "target_modules lists a projection twice" });
  const ws = c.warm_start;
  if (ws?.fit_schedule_to_time === true && ws.max_seconds === undefined) ctx.addIssue({ code: "custom", path: ["warm_start", "fit_schedule_to_time"], message: "fit_schedule_to_time fits the decay to max_seconds: set warm_start.max_seconds" });
  if (ws?.max_epochs !== undefined) {
    if (ws.max_epochs < ws.epochs) ctx.addIssue({ code: "custom", path: ["warm_start", "max_epochs"], message: `max_epochs ${ws.max_epochs} is below epochs ${ws.epochs}` });
    if (ws.stop_at_nll === undefined && ws.stop_at_demo_prob === undefined && ws.stop_at_pass_rate === undefined) ctx.addIssue({ code: "custom", path: ["warm_start", "max_epochs"], message: "max_epochs extends SFT until a target is reached: set stop_at_nll, stop_at_demo_prob or stop_at_pass_rate" });
  }
  if (ws?.stop_at_pass_rate && c.eval && ws.stop_at_pass_rate.tasks === c.eval.tasks) ctx.addIssue({ code: "custom", path: ["warm_start", "stop_at_pass_rate", "tasks"], message: "the held-out evaluation's tasks would decide where the warm start stops: give stop_at_pass_rate held-in tasks of its own" });
  if (c.mix !== "scheduled" && c.scheduler) ctx.addIssue({ code: "custom", path: ["scheduler"], message: "a scheduler is only used with mix: scheduled" });
  // The bandit's probability floor is spent once per harness (src/schedule/harness-bandit.ts).
  if (c.scheduler?.name === "harness-bandit" && c.scheduler.p_min * c.harnesses.length > 1) ctx.addIssue({ code: "custom", path: ["scheduler", "p_min"], message: `${c.scheduler.p_min} is infeasible for ${c.harnesses.length} harnesses: K·p_min must be ≤ 1` });
  // Probe harnesses are evaluated, never trained: one that is also a training harness would be both.
  if (c.scheduler?.name === "harness-bandit") {
    c.scheduler.probe_harnesses.forEach((h, i) => {
      if (c.harnesses.includes(h)) ctx.addIssue({ code: "custom", path: ["scheduler", "probe_harnesses", i], message: `"${h}" is a training harness; a probe harness must be outside \`harnesses\`` });
    });
  }
});

/** Keys that moved to another section (older configs): the error names where the knob lives now. */
const MOVED = { "algorithm.name": "advantage.estimator", "algorithm.std_normalize": "advantage.normalize_std", "algorithm.loss_agg": "advantage.aggregation" };

export function parseRunConfig(value: unknown, source = "config"): RunConfig {
  const r = checkedSchema.safeParse(value);
  if (!r.success) {
    const lines = issueLines(r.error.issues, runConfigSchema, value, MOVED).map((l) => `  ${l}`);
    throw new UserError("invalid_config", `${source} is not a valid run config:\n${lines.join("\n")}`);
  }
  return r.data;
}

/** A run config as loaded for a run: validated, and the YAML text the run was given (the file with `--set` applied). */
export interface RunConfigSource {
  config: RunConfig;
  text: string;
}

/** Reads, applies `--set` overrides to, and validates a run config file. */
export function loadRunConfigSource(path: string, overrides: readonly ConfigOverride[] = []): RunConfigSource {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new UserError("config_not_found", `cannot read config ${path}: ${errorMessage(e)}`);
  }
  const effective = applyOverrides(text, path, overrides);
  let value: unknown;
  try {
    value = parseYaml(effective);
  } catch (e) {
    throw new UserError("invalid_config", `${path} is not valid YAML: ${errorMessage(e)}`);
  }
  const source = overrides.length === 0 ? path : `${path} with ${overrides.map((o) => `--set ${o.text}`).join(" ")}`;
  return { config: parseRunConfig(value, source), text: effective };
}

export function loadRunConfig(path: string): RunConfig {
  return loadRunConfigSource(path).config;
}

/** `--check`'s one-line verdict on a valid config: what the run would do, briefly. */
export function configCheckLine(path: string, c: RunConfig): string {
  const start = c.warm_start ? "warm start + " : "";
  // Time caps make the result depend on the machine's speed: name them, so a check shows what may cut the run short.
  const probes = c.scheduler?.name === "harness-bandit" ? c.scheduler.probe_harnesses : [];
  const caps = [c.warm_start?.max_seconds === undefined ? null : `warm start ${c.warm_start.max_seconds} s`, c.budget.max_minutes === undefined ? null : `RL ${c.budget.max_minutes} min`].filter((v) => v !== null);
  return `OK ${path}: run "${c.name}", ${start}${c.budget.steps} ${c.advantage.estimator} steps through ${c.harnesses.join(", ")} (mix: ${c.mix}${c.scheduler ? `, ${c.scheduler.name}` : ""}${probes.length ? `, probes: ${probes.join(", ")}` : ""})${caps.length ? `; time caps: ${caps.join(", ")}` : ""}`;
}
