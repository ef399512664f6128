// Harness scaling through the real CLIs (docs/harness-scaling.md): does training through more harnesses raise pass@1
// on a harness never trained through? Per seed, one warm start through all training harnesses (evaluated once: it is
// every arm's "before"), then each arm from that warm start's checkpoint at the same rollout budget, evaluated after
// RL on every training harness and the held-out one.
//
//   node experiments/real-harness-scaling/run.mjs [--scale full|ci] [--seeds 0,1,2] [--arms one,two,...] [--root DIR] [--check]
//        [--cluster REDIS_URL --store STORE_URL --engine-url SERVE_URL [--engines SPEC,...]]
//
// With --cluster, every run's rollouts and evaluations go to rollout nodes (docs/cluster.md): the configs get
// `engine: llamacpp-http` at --engine-url (a `harnessrl serve` of a qwen3-tiny model directory, started with --ctx at
// least the scale's context size) and a `cluster:` section; the warm start's SFT and each arm's training stay here.
//
// Run from the repository root after `npm run build`. Finished runs (a summary.json) are skipped, an interrupted one
// resumes, so the command can simply be run again. --check writes and validates every config without running any.
// Then: node experiments/real-harness-scaling/table.mjs --root DIR
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

// The RL recipe that gained +15.6 points through pi (configs/real-pi.yaml, docs/training.md).
const ALGORITHM = { lr: 0.003, clip_low: 0.2, clip_high: 0.28, tis_cap: 2, kl_coef: 0.1, minibatches: 2, reset_optimizer: "first_moment" };

/**
 * `full` is the experiment of issue 24: four training harnesses, OpenClaw held out, 200 evaluation tasks per
 * (arm, harness) cell, 16 RL steps of 24 rollouts. `ci` is the same machinery at a size a test can run: two cheap real
 * CLIs, a built-in harness held out, one step.
 */
export const SCALES = {
  full: {
    train: ["pi", "codex", "qwen-code", "claude-code"],
    heldOut: "openclaw",
    // Claude Code's first prompt is ~19k Qwen3 tokens and grows per turn.
    engine: { kind: "llamacpp", sequences: 8, threads: 1, context_size: 32768 },
    rollout: { sandbox: "bwrap", concurrency: 8, max_turns: 4, timeout_s: 300, memory_mb: 2048 },
    sampling: { temperature: 1.0, max_tokens: 256 },
    warmStart: {
      demos: "calcrun:train?n=40&seed=2",
      epochs: 6,
      stop_at_nll: 0.1,
      lr: 0.01,
      // Rows hold Claude Code's prompt once plus a few demonstrations; shorter harnesses' demonstrations pack densely.
      batch_tokens: 20480,
      row_tokens: 20480,
      lr_schedule: { warmup_steps: 3, decay: "cosine", min_ratio: 0.1 },
    },
    rowTokens: 32768,
    steps: 16,
    // Rollouts per step = tasks × samples, the same in every arm: a k-harness mixed step takes tasks/k tasks.
    tasksPerStep: 4,
    samples: 6,
    evalTasks: "calcrun:test?n=200&seed=3",
    arms: ["one", "two", "four-mixed", "four-round-robin", "four-uniform", "four-bandit", "four-bandit-probe"],
  },
  ci: {
    train: ["pi", "codex"],
    heldOut: "chat-agent",
    engine: { kind: "llamacpp", sequences: 4, threads: 1, context_size: 16384 },
    rollout: { sandbox: "bwrap", concurrency: 4, max_turns: 2, timeout_s: 180, memory_mb: 1024 },
    sampling: { temperature: 1.0, max_tokens: 32 },
    warmStart: { demos: "calcrun:train?n=1&seed=2", epochs: 1, lr: 0.01, batch_tokens: 8192, row_tokens: 8192 },
    rowTokens: 16384,
    steps: 1,
    tasksPerStep: 2,
    samples: 2,
    evalTasks: "calcrun:test?n=1&seed=3",
    arms: ["one", "two"],
  },
};

/** An arm: which training harnesses (the first k of the scale's list) and how a step picks among them. */
export function armSpec(scale, arm) {
  const s = SCALES[scale];
  // count: how many of the scale's training harnesses (the first ones) the arm trains through.
  const specs = {
    one: { count: 1, mix: "single" },
    two: { count: 2, mix: "mixed" },
    "four-mixed": { count: 4, mix: "mixed" },
    "four-round-robin": { count: 4, mix: "scheduled", scheduler: { name: "round-robin" } },
    "four-uniform": { count: 4, mix: "scheduled", scheduler: { name: "uniform" } },
    "four-bandit": { count: 4, mix: "scheduled", scheduler: { name: "harness-bandit" } },
    // The held-out harness as a probe: a few rollouts per step enter transferability, never a gradient.
    "four-bandit-probe": {
      count: 4,
      mix: "scheduled",
      scheduler: { name: "harness-bandit", probe_harnesses: [s.heldOut], probe_every: 1, probe_tasks: 1, probe_weight: 0.5 },
    },
  };
  const found = specs[arm];
  if (!found) throw new Error(`unknown arm "${arm}" (known: ${Object.keys(specs).join(", ")})`);
  const { count, ...spec } = found;
  if (s.train.length < count) throw new Error(`arm "${arm}" needs ${count} training harnesses; scale "${scale}" has ${s.train.join(", ")}`);
  return { ...spec, harnesses: s.train.slice(0, count) };
}

const evalHarnesses = (s) => [...s.train, s.heldOut];

/** The `engine` and `cluster` keys of a run on rollout nodes, or nothing for a single-machine run. */
export function clusterKeys(options) {
  if (!options?.cluster) return {};
  if (!options.store || !options.engineUrl) throw new Error("--cluster needs --store (the central record store every node reaches) and --engine-url (the served policy)");
  return {
    engine: { kind: "llamacpp-http", url: options.engineUrl },
    cluster: { queue: options.cluster, store: options.store, ...(options.engines?.length ? { engines: options.engines } : {}), attempts: 3 },
  };
}

function common(s, seed, cluster) {
  return {
    seed,
    engine: s.engine,
    ...clusterKeys(cluster),
    sampling: s.sampling,
    rollout: s.rollout,
    tasks: { train: "calcrun:train?n=400&seed=1" },
    algorithm: { ...ALGORITHM, row_tokens: s.rowTokens, batch_tokens: s.rowTokens },
    advantage: { estimator: "grpo", negative_scale: 0 },
  };
}

/** The shared warm start: demonstrations through every training harness, evaluated once on every harness. */
export function warmConfig(scale, seed, cluster) {
  const s = SCALES[scale];
  return {
    name: `real-scaling-warm-s${seed}`,
    model: { preset: "qwen3-tiny", seed },
    ...common(s, seed, cluster),
    harnesses: s.train,
    warm_start: s.warmStart,
    budget: { steps: 0 },
    eval: { tasks: s.evalTasks, harnesses: evalHarnesses(s), samples: 1, before: true, after: false },
  };
}

export function armConfig(scale, seed, arm, warmDir, cluster) {
  const s = SCALES[scale];
  const spec = armSpec(scale, arm);
  const k = spec.mix === "mixed" ? spec.harnesses.length : 1;
  if (s.tasksPerStep % k !== 0) throw new Error(`tasksPerStep ${s.tasksPerStep} does not split over ${k} harnesses`);
  return {
    name: `real-scaling-${arm}-s${seed}`,
    model: { checkpoint: join(warmDir, "checkpoints", "step-0000") },
    ...common(s, seed, cluster),
    harnesses: spec.harnesses,
    mix: spec.mix,
    // Seeded schedulers (uniform, harness-bandit) take the run's seed.
    ...(spec.scheduler ? { scheduler: spec.scheduler } : {}),
    budget: { steps: s.steps, tasks_per_step: s.tasksPerStep / k, samples: s.samples },
    eval: { tasks: s.evalTasks, harnesses: evalHarnesses(s), samples: 1, before: false, after: true },
  };
}

function train(args) {
  const r = spawnSync(process.execPath, ["dist/cli/main.js", "train", ...args], { stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error(`harnessrl train ${args.join(" ")} exited with ${r.status ?? r.signal}`);
}

function runOne(configDir, runDir, config, check) {
  const path = join(configDir, `${config.name}.yaml`);
  // JSON is YAML: the config loader validates it like any hand-written config.
  writeFileSync(path, `# Written by experiments/real-harness-scaling/run.mjs\n${JSON.stringify(config, null, 2)}\n`);
  if (check) return train(["--config", path, "--run-dir", runDir, "--check"]);
  if (existsSync(join(runDir, "summary.json"))) {
    console.log(`[real-scaling] ${config.name}: done before, skipped`);
    return;
  }
  console.log(`[real-scaling] ${config.name}`);
  train(["--config", path, "--run-dir", runDir]);
}

function main() {
  const { values } = parseArgs({
    options: {
      scale: { type: "string", default: "full" },
      seeds: { type: "string", default: "0,1,2" },
      arms: { type: "string" },
      root: { type: "string", default: "runs/real-scaling" },
      check: { type: "boolean", default: false },
      cluster: { type: "string" },
      store: { type: "string" },
      "engine-url": { type: "string" },
      engines: { type: "string" },
    },
  });
  const cluster = values.cluster
    ? { cluster: values.cluster, store: values.store, engineUrl: values["engine-url"], engines: values.engines ? values.engines.split(",") : [] }
    : undefined;
  if (!cluster && (values.store || values["engine-url"] || values.engines)) throw new Error("--store, --engine-url and --engines go with --cluster");
  clusterKeys(cluster);
  const scale = values.scale;
  if (!(scale in SCALES)) throw new Error(`unknown scale "${scale}" (full | ci)`);
  const seeds = values.seeds.split(",").map((x) => Number.parseInt(x, 10));
  if (seeds.some((x) => !Number.isInteger(x) || x < 0)) throw new Error(`--seeds must be non-negative integers, got "${values.seeds}"`);
  const arms = values.arms ? values.arms.split(",") : SCALES[scale].arms;
  for (const arm of arms) armSpec(scale, arm);
  const configDir = join(values.root, "configs");
  mkdirSync(configDir, { recursive: true });
  // What table.mjs needs to know about the layout.
  writeFileSync(join(values.root, "plan.json"), `${JSON.stringify({ scale, seeds, arms, train: SCALES[scale].train, heldOut: SCALES[scale].heldOut }, null, 2)}\n`);
  for (const seed of seeds) {
    const warmDir = join(values.root, `s${seed}`, "warm");
    runOne(configDir, warmDir, warmConfig(scale, seed, cluster), values.check);
    for (const arm of arms) runOne(configDir, join(values.root, `s${seed}`, arm), armConfig(scale, seed, arm, warmDir, cluster), values.check);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    main();
  } catch (e) {
    console.error(`real-harness-scaling: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}
