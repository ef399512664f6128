import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { UserError } from "../core/errors.js";
import { Progress } from "../core/progress.js";
import { rolloutKey } from "../eval/journal.js";
import { RolloutStack } from "../rollout/stack.js";
import { expandPlan, retryLine } from "../rollout/runner.js";
import { buildRolloutJobContext } from "../run/context.js";
import type { RolloutResult } from "../tasks/rollout-result.js";
import { loadSuite } from "../tasks/registry.js";
import { boundedIntOption, intOption, listOption, numberOption } from "./args.js";
import { ClusterDispatcher } from "../cluster/dispatch.js";
import { jobsOfPlan, resultOfGathered, runIdOf } from "../cluster/plan.js";
import type { RolloutPlan } from "../rollout/runner.js";
import { openStore } from "../store/registry.js";
import { DEFAULT_ROLLOUT_SETTINGS } from "../rollout/run-one.js";
import { MEMORY_MB_MAX, MEMORY_MB_MIN } from "../sandbox/options.js";
import { runJournaled } from "../train/journaled-run.js";
import { jobPolicy } from "./job-policy.js";

/** Options shared by `harnessrl rollout` and `harnessrl eval`. */
export const rolloutOptions = {
  engine: { type: "string" },
  tasks: { type: "string" },
  harness: { type: "string" },
  samples: { type: "string" },
  concurrency: { type: "string" },
  out: { type: "string" },
  sandbox: { type: "string" },
  temperature: { type: "string" },
  "top-k": { type: "string" },
  "max-tokens": { type: "string" },
  "max-turns": { type: "string" },
  "timeout-s": { type: "string" },
  attempts: { type: "string" },
  "memory-mb": { type: "string" },
  "model-dir": { type: "string" },
  cluster: { type: "string" },
  store: { type: "string" },
  seeds: { type: "string" },
  json: { type: "boolean" },
} as const;

export const rolloutUsage = `  --engine <spec>     sampling engine: oracle, scripted:<module.mjs>, llamacpp:<model dir>, vllm:<url>, … (default oracle)
  --tasks <suite>     task suite spec, e.g. arith:test?n=20, mix:train, dir:<path>[:split] (default mix:test?n=6)
  --harness <list>    comma-separated harness names (default chat-agent)
  --samples k         samples per (task, harness) (default 1)
  --concurrency N     rollouts in flight (default 8)
  --out DIR           run directory for records and results (default runs/<command>-<time>); the same command
                      with the same --out, engine, model files and settings continues a stopped job
  --sandbox NAME      bwrap (default) or local-unsafe
  --temperature T     sampling temperature (default 1)
  --top-k K           sample from the K most likely tokens only (default 0: the whole distribution)
  --max-tokens N      sampled tokens per call (default 256)
  --max-turns N       harness turn budget (default 8)
  --timeout-s S       harness wall-clock budget per rollout (default 120)
  --attempts N        attempts per rollout while they end in a retryable infrastructure error (default 3; with
                      --cluster the queue retries jobs instead)
  --memory-mb N       the sandbox's memory limit in MiB (16 to 1048576; default 2048); with --cluster it travels
                      with each job (default: the node's own), and a node refuses more than its --max-memory-mb
  --model-dir DIR     the policy's model directory: its tokenizer and chat template for every engine (the oracle and
                      scripted engines render with them), and the weights of engines that take one
  --cluster URL       run the rollouts as jobs on a cluster's rollout nodes (harnessrl node) through its queue,
                      redis://:<password>@<host>:<port>; the engine spec must be reachable from the nodes
  --store SPEC        with --cluster: the central record store nodes ship to (default sqlite:<out>/records.sqlite)
  --seeds KEY         common random numbers: each rollout samples with seeds derived from KEY and its (task, harness,
                      sample), so two jobs with the same KEY (two policies, say) sample the same tokens wherever the
                      policies agree, and their paired difference is less noisy (default: a random seed per call)
  --json              print the machine-readable result on stdout`;

export interface RolloutJobResult {
  outDir: string;
  results: RolloutResult[];
}

type Values = { [K in keyof typeof rolloutOptions]?: (typeof rolloutOptions)[K]["type"] extends "boolean" ? boolean : string };

/**
 * Runs a rollout job from CLI options into its run directory (records.sqlite, rollouts.jsonl, <command>-journal.jsonl);
 * run again with the same --out and settings, it continues where it was stopped.
 */
export async function runRolloutJob(command: string, values: Values, defaults: { tasks: string }): Promise<RolloutJobResult> {
  const outDir = resolve(values.out ?? join("runs", `${command}-${new Date().toISOString().replace(/[:.]/g, "-")}`));
  mkdirSync(outDir, { recursive: true });
  const suite = await loadSuite(values.tasks ?? defaults.tasks);
  const harnesses = listOption(values.harness, ["chat-agent"]);
  const samples = intOption("samples", values.samples, 1, 1);
  const concurrency = intOption("concurrency", values.concurrency, 8, 1);
  const maxTokens = intOption("max-tokens", values["max-tokens"], 256, 1);
  const memoryMb = boundedIntOption("memory-mb", values["memory-mb"], MEMORY_MB_MIN, MEMORY_MB_MAX);
  const seeds = values.seeds === undefined ? {} : { samplingSeeds: seedsOption(values.seeds) };
  if (values.cluster) return runOnCluster(values.cluster, outDir, values, { tasks: suite.tasks, harnesses, samples, idPrefix: command, ...seeds }, command);
  const ctx = buildRolloutJobContext({
    engine: values.engine ?? "oracle",
    ...(values["model-dir"] ? { modelDir: values["model-dir"] } : {}),
    store: `sqlite:${join(outDir, "records.sqlite")}`,
    sandbox: values.sandbox ?? "bwrap",
    concurrency,
    sampling: samplingOption(values, maxTokens),
    rolloutSettings: {
      maxTurns: intOption("max-turns", values["max-turns"], 8, 1),
      maxTokens,
      harnessTimeoutMs: 1000 * intOption("timeout-s", values["timeout-s"], 120, 1),
      attempts: boundedIntOption("attempts", values.attempts, 1, 10) ?? 3,
      ...(memoryMb === undefined ? {} : { limits: { ...DEFAULT_ROLLOUT_SETTINGS.limits, memoryBytes: memoryMb * 1024 * 1024 } }),
    },
  });
  const plan = { tasks: suite.tasks, harnesses, samples, ...seeds };
  const { attempts: _attempts, ...shaping } = ctx.rolloutSettings;
  const total = suite.tasks.length * harnesses.length * samples;
  const resultsFile = join(outDir, "rollouts.jsonl");
  const progress = new Progress(command, total);
  let passed = 0;
  const stack = await RolloutStack.open(ctx.stack);
  try {
    // Running the same job again with the same --out continues it: finished rollouts are kept, not rerun.
    const done = await runJournaled(stack, plan, {
      path: join(outDir, `${command}-journal.jsonl`),
      label: command,
      // Attempts change how often an infrastructure error is retried, not what a rollout samples: not in the digest.
      policy: jobPolicy(ctx.policy.engine, { sampling: ctx.stack.sampling, settings: shaping, sandbox: ctx.stack.sandbox }),
      concurrency: ctx.concurrency,
      settings: ctx.rolloutSettings,
      onOpened: (journal, opening) => {
        if (opening.restarted) console.error(`${command}: not continuing ${journal.path}: ${opening.restarted}; running every rollout`);
        if (opening.kept > 0) console.error(`${command}: resuming with ${opening.kept} of ${total} rollouts done (${journal.path})`);
        writeFileSync(resultsFile, journal.done.map((r) => `${JSON.stringify(r)}\n`).join(""));
        passed = journal.done.filter((r) => r.status === "ok").length;
        if (opening.kept > 0) progress.update(opening.kept, `passed ${passed}`);
      },
      onResult: (r, count) => {
        appendFileSync(resultsFile, `${JSON.stringify(r)}\n`);
        if (r.status === "ok") passed++;
        progress.update(count, `passed ${passed}`);
      },
      onRetry: (failed, attempt, attempts) => console.error(`${command}: ${retryLine(failed, attempt, attempts)}`),
    });
    const results = inPlanOrder(plan, done);
    writeFileSync(join(outDir, "rollouts.json"), `${JSON.stringify(results, null, 1)}\n`);
    return { outDir, results };
  } finally {
    await stack.close();
  }
}

/** --seeds: a key that travels in cluster jobs, so bounded and printable like the job schema wants it. */
function seedsOption(text: string): string {
  if (text.length < 1 || text.length > 200 || !/^[\x21-\x7e]+$/.test(text)) throw new UserError("invalid_arguments", `--seeds must be 1 to 200 printable characters without spaces, got ${JSON.stringify(text.slice(0, 40))}`);
  return text;
}

/** The job's sampling from --temperature and --top-k (omitted when 0, so jobs stay readable by older nodes). */
function samplingOption(values: Values, maxTokens: number): { temperature: number; maxTokens: number; topK?: number } {
  const topK = intOption("top-k", values["top-k"], 0, 0);
  return { temperature: numberOption("temperature", values.temperature, 1), maxTokens, ...(topK > 0 ? { topK } : {}) };
}

/** Results in the plan's order (task, harness, sample), whichever attempt finished them. */
function inPlanOrder(plan: Omit<RolloutPlan, "idPrefix">, results: readonly RolloutResult[]): RolloutResult[] {
  const at = new Map(expandPlan({ ...plan, idPrefix: "" }).map(({ request }, i) => [rolloutKey(request), i]));
  const index = (r: RolloutResult): number => at.get(rolloutKey(r)) ?? Number.MAX_SAFE_INTEGER;
  return [...results].sort((a, b) => index(a) - index(b));
}

/**
 * The same rollouts as jobs on a cluster: enqueued under ids derived from the run directory (running the command
 * again with the same --out resumes: finished jobs are gathered, not rerun) and gathered from whichever node ran them.
 */
async function runOnCluster(cluster: string, outDir: string, values: Values, plan: RolloutPlan, command: string): Promise<RolloutJobResult> {
  const store = values.store ?? `sqlite:${join(outDir, "records.sqlite")}`;
  // Created (and migrated) once here, before nodes open it concurrently.
  openStore(store).close();
  const maxTokens = intOption("max-tokens", values["max-tokens"], 256, 1);
  const memoryMb = boundedIntOption("memory-mb", values["memory-mb"], MEMORY_MB_MIN, MEMORY_MB_MAX);
  const jobs = jobsOfPlan(plan, {
    runId: runIdOf(outDir),
    engine: values.engine ?? "oracle",
    store,
    policyVersion: null,
    sampling: samplingOption(values, maxTokens),
    settings: {
      maxTurns: intOption("max-turns", values["max-turns"], 8, 1),
      maxTokens,
      harnessTimeoutMs: 1000 * intOption("timeout-s", values["timeout-s"], 120, 1),
      // Unset: the job carries none and each node applies its own default (nodes older than the field still take it).
      ...(memoryMb === undefined ? {} : { memoryMb }),
    },
  });
  const byId = new Map(jobs.map((j) => [j.rolloutId, j]));
  const dispatcher = await ClusterDispatcher.open(cluster);
  try {
    // A node capped below the run's --memory-mb fails each job it takes for good: say so before adding them (not a
    // refusal: nodes may join later).
    const misfit = await dispatcher.memoryWarning(memoryMb);
    if (misfit) console.error(`${command}: cluster: ${misfit}`);
    const progress = new Progress(command, jobs.length);
    let passed = 0;
    const resultsFile = join(outDir, "rollouts.jsonl");
    // Rewritten from the gathered ends: a resumed control plane gathers every job again, so appending would count twice.
    writeFileSync(resultsFile, "");
    const gathered = await dispatcher.run(jobs, {
      onGathered: (g, done) => {
        const job = byId.get(g.rolloutId)!;
        const r = resultOfGathered(job, g);
        appendFileSync(resultsFile, `${JSON.stringify(r)}\n`);
        if (r.status === "ok") passed++;
        progress.update(done, `passed ${passed}`);
      },
    });
    const results = gathered.map((g, i) => resultOfGathered(jobs[i]!, g));
    const dropped = gathered.filter((g) => g.outcome === "failed");
    if (dropped.length > 0) console.error(`${command}: ${dropped.length} rollout job(s) failed on every attempt and were dropped (queue's failed set): ${dropped.slice(0, 5).map((g) => `${g.rolloutId}: ${g.outcome === "failed" ? g.reason.slice(0, 200) : ""}`).join("; ")}`);
    writeFileSync(join(outDir, "rollouts.json"), `${JSON.stringify(results, null, 1)}\n`);
    return { outDir, results };
  } finally {
    await dispatcher.close();
  }
}
