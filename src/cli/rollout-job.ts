import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Progress } from "../core/progress.js";
import { RolloutStack } from "../rollout/stack.js";
import { runRollouts } from "../rollout/runner.js";
import { buildRolloutJobContext } from "../run/context.js";
import type { RolloutResult } from "../tasks/rollout-result.js";
import { loadSuite } from "../tasks/registry.js";
import { intOption, listOption, numberOption } from "./args.js";

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
  "max-tokens": { type: "string" },
  "max-turns": { type: "string" },
  "timeout-s": { type: "string" },
  "model-dir": { type: "string" },
  json: { type: "boolean" },
} as const;

export const rolloutUsage = `  --engine <spec>     sampling engine: oracle, scripted:<module.mjs>, llamacpp:<model dir>, vllm:<url>, … (default oracle)
  --tasks <suite>     task suite spec, e.g. arith:test?n=20, mix:train, dir:<path>[:split] (default mix:test?n=6)
  --harness <list>    comma-separated harness names (default chat-agent)
  --samples k         samples per (task, harness) (default 1)
  --concurrency N     rollouts in flight (default 8)
  --out DIR           run directory for records and results (default runs/<command>-<time>)
  --sandbox NAME      bwrap (default) or local-unsafe
  --temperature T     sampling temperature (default 1)
  --max-tokens N      sampled tokens per call (default 256)
  --max-turns N       harness turn budget (default 8)
  --timeout-s S       harness wall-clock budget per rollout (default 120)
  --model-dir DIR     the policy's model directory: its tokenizer and chat template for every engine (the oracle and
                      scripted engines render with them), and the weights of engines that take one
  --json              print the machine-readable result on stdout`;

export interface RolloutJobResult {
  outDir: string;
  results: RolloutResult[];
}

type Values = { [K in keyof typeof rolloutOptions]?: (typeof rolloutOptions)[K]["type"] extends "boolean" ? boolean : string };

/** Runs a rollout job from CLI options into its run directory (records.sqlite, rollouts.jsonl). */
export async function runRolloutJob(command: string, values: Values, defaults: { tasks: string }): Promise<RolloutJobResult> {
  const outDir = resolve(values.out ?? join("runs", `${command}-${new Date().toISOString().replace(/[:.]/g, "-")}`));
  mkdirSync(outDir, { recursive: true });
  const suite = await loadSuite(values.tasks ?? defaults.tasks);
  const harnesses = listOption(values.harness, ["chat-agent"]);
  const samples = intOption("samples", values.samples, 1, 1);
  const concurrency = intOption("concurrency", values.concurrency, 8, 1);
  const maxTokens = intOption("max-tokens", values["max-tokens"], 256, 1);
  const ctx = buildRolloutJobContext({
    engine: values.engine ?? "oracle",
    ...(values["model-dir"] ? { modelDir: values["model-dir"] } : {}),
    store: `sqlite:${join(outDir, "records.sqlite")}`,
    sandbox: values.sandbox ?? "bwrap",
    concurrency,
    sampling: { temperature: numberOption("temperature", values.temperature, 1), maxTokens },
    rolloutSettings: { maxTurns: intOption("max-turns", values["max-turns"], 8, 1), maxTokens, harnessTimeoutMs: 1000 * intOption("timeout-s", values["timeout-s"], 120, 1) },
  });
  const stack = await RolloutStack.open(ctx.stack);
  try {
    const total = suite.tasks.length * harnesses.length * samples;
    const progress = new Progress(command, total);
    let passed = 0;
    const results = await runRollouts(
      stack,
      { tasks: suite.tasks, harnesses, samples, idPrefix: command },
      {
        concurrency: ctx.concurrency,
        resultsFile: join(outDir, "rollouts.jsonl"),
        settings: ctx.rolloutSettings,
        onResult: (r, done) => {
          if (r.status === "ok") passed++;
          progress.update(done, `passed ${passed}`);
        },
      },
    );
    writeFileSync(join(outDir, "rollouts.json"), `${JSON.stringify(results, null, 1)}\n`);
    return { outDir, results };
  } finally {
    await stack.close();
  }
}
