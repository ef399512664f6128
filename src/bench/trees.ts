/**
 * `npm run bench:trees`: tree reconstruction speed and memory on 10k calls with ~8k-token prompts, batch building
 * speed, and dedup ratios on synthetic multi-turn traces. Writes docs/bench/trees.json.
 *
 * Options: --calls N (default 10000), --prompt N (target mean prompt tokens, default 8000), --out FILE,
 * --traces FILE (recorded calls as JSON `{records, sessions}`, default test/trees/fixtures/captured-oracle.json: the
 * built-in harnesses captured through the proxy). Synthetic traces are random token ids shaped like harness sessions.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { buildBatch } from "../batch/build.js";
import type { CallRecord } from "../icr/records.js";
import { ICR_SCHEMA_VERSION } from "../icr/records.js";
import { buildForests } from "../trees/forest.js";
import { dedupStats, round3 as round } from "./dedup.js";
import { mulberry32 } from "../core/random.js";

const prng = mulberry32;

function tokens(r: () => number, n: number): number[] {
  // Packed (not holey) arrays, like records decoded from the store.
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(Math.floor(r() * 150_000));
  return out;
}

function record(callId: string, sessionId: string, prompt: number[], completion: number[], parent: string | null, brk: CallRecord["break"] = null): CallRecord {
  return {
    schemaVersion: ICR_SCHEMA_VERSION,
    callId,
    sessionId,
    rolloutId: `r_${sessionId}`,
    harness: "bench",
    agentRole: null,
    agentId: null,
    protocol: "openai-chat",
    stream: false,
    status: "ok",
    error: null,
    rawRequest: null,
    rawResponse: null,
    messages: [],
    tools: [],
    response: { role: "assistant", content: "", toolCalls: [{ id: "t", name: "bash", arguments: "{}" }] },
    promptTokens: prompt,
    completionTokens: completion,
    logprobs: completion.map(() => -0.5),
    // Random token ids hold no parsable tool call; masks are not what this bench measures.
    spans: { toolCalls: [], malformed: 0 },
    policyVersion: 1,
    samplingRequested: {},
    samplingUsed: null,
    finishReason: "stop",
    timings: { receivedAt: 0, engineStartAt: null, firstTokenAt: null, engineEndAt: null, recordedAt: 0 },
    parentCallId: parent,
    reusedPrefixTokens: 0,
    break: brk,
    spawnedByCallId: null,
  };
}

type Shape = "prefix-stable" | "reasoning-stripped" | "retries" | "grpo-groups-of-8";

/**
 * One synthetic session of `turns` calls. `prefix-stable`: every prompt extends the previous prompt + completion (a
 * harness whose template is prefix-stable); `reasoning-stripped`: the harness sends earlier assistant turns back
 * without their reasoning, so each prompt shares only up to the previous turn's reasoning (every turn is a branch);
 * `retries`: prefix-stable with a regeneration of ~1 in 4 calls; `grpo-groups-of-8`: prefix-stable, 8 rollouts per task
 * sharing system prompt + task (what a GRPO group looks like).
 */
function session(r: () => number, id: string, turns: number, system: number | number[], shape: Shape): CallRecord[] {
  const out: CallRecord[] = [];
  let history = typeof system === "number" ? tokens(r, system) : [...system];
  for (let t = 0; t < turns; t++) {
    const reasoning = shape === "reasoning-stripped" ? tokens(r, 60) : [];
    const action = tokens(r, 40 + Math.floor(r() * 60));
    const completion = [...reasoning, ...action];
    const prev = out[out.length - 1];
    const brk: CallRecord["break"] = shape === "reasoning-stripped" && prev ? { kind: "stripped_reasoning", detail: "bench", fromCallId: prev.callId } : null;
    const c = record(`${id}_${t}`, id, history, completion, prev?.callId ?? null, brk);
    out.push(c);
    if (shape === "retries" && r() < 0.25) out.push(record(`${id}_${t}_retry`, id, history, tokens(r, 80), prev?.callId ?? null));
    const toolOutput = tokens(r, 100 + Math.floor(r() * 100));
    history = shape === "reasoning-stripped" ? [...history, ...action, ...toolOutput] : [...history, ...completion, ...toolOutput];
  }
  return out;
}

function gcNow(): void {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  gc();
}

/** CPU time of this process (all threads, so GC helpers count) since `from`. */
function cpuSeconds(from: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1e6;
}

function mib(n: number): number {
  return Math.round((n / 2 ** 20) * 10) / 10;
}

/** Dedup per harness on recorded traces (rollout ids name the harness: `rollout-<task>-<harness>-<k>`). */
function recordedDedup(file: string): { file: string; byHarness: Record<string, Record<string, number>> } | null {
  if (!existsSync(file)) return null;
  const data = JSON.parse(readFileSync(file, "utf8")) as { records: CallRecord[] };
  const groups = new Map<string, CallRecord[]>();
  for (const r of data.records) {
    const h = r.harness ?? "unknown";
    groups.set(h, [...(groups.get(h) ?? []), r]);
  }
  const byHarness: Record<string, Record<string, number>> = {};
  for (const [h, recs] of groups) byHarness[h] = { ...dedupStats(recs), rollouts: new Set(recs.map((r) => r.rolloutId)).size };
  return { file, byHarness };
}


function main(): void {
  const { values } = parseArgs({ options: { calls: { type: "string" }, prompt: { type: "string" }, out: { type: "string" }, traces: { type: "string" } } });
  const calls = Number(values.calls ?? 10_000);
  const meanPrompt = Number(values.prompt ?? 8_000);
  const out = resolve(values.out ?? "docs/bench/trees.json");
  const r = prng(42);
  const turns = 10;
  // Mean prompt = system + mean accumulated history (≈ 4.5 turns × ~250 tokens).
  const system = Math.max(100, meanPrompt - Math.round(4.5 * 250));

  const records: CallRecord[] = [];
  for (let s = 0; records.length < calls; s++) records.push(...session(r, `s${s}`, Math.min(turns, calls - records.length), system, "prefix-stable"));
  const promptTokens = records.reduce((n, c) => n + c.promptTokens.length, 0);

  buildForests(records.slice(0, 500)); // warm-up: compile the hot paths before timing
  gcNow();
  const heapBefore = process.memoryUsage().heapUsed;
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const forests = buildForests(records);
  const buildS = Number(process.hrtime.bigint() - t0) / 1e9;
  const buildCpuS = cpuSeconds(c0);
  gcNow();
  const heapTrees = process.memoryUsage().heapUsed - heapBefore;
  const nodes = forests.reduce((n, f) => n + f.trees.reduce((m, t) => m + t.nodes.length, 0), 0);

  const c1 = process.cpuUsage();
  const t1 = process.hrtime.bigint();
  const batch = buildBatch(forests, { layout: "tree", tokenBudget: 65_536 });
  const batchS = Number(process.hrtime.bigint() - t1) / 1e9;
  const batchCpuS = cpuSeconds(c1);
  const rss = process.memoryUsage().rss;

  const shapes: Shape[] = ["prefix-stable", "reasoning-stripped", "retries", "grpo-groups-of-8"];
  const dedupResults: Record<string, Record<string, number>> = {};
  for (const shape of shapes) {
    const rr = prng(7);
    const recs: CallRecord[] = [];
    let shared: number[] = [];
    for (let s = 0; s < 40; s++) {
      if (s % 8 === 0) shared = tokens(rr, 2_000);
      recs.push(...session(rr, `${shape}_${s}`, 5 + (s % 8), shape === "grpo-groups-of-8" ? shared : 2_000, shape === "grpo-groups-of-8" ? "prefix-stable" : shape));
    }
    dedupResults[shape] = { ...dedupStats(recs) };
  }

  const recorded = recordedDedup(resolve(values.traces ?? "test/trees/fixtures/captured-oracle.json"));

  const result = {
    date: new Date().toISOString(),
    node: process.version,
    // Wall-clock rates depend on how busy the machine was; CPU-second rates much less so.
    loadAverage1m: round(loadavg()[0] ?? 0),
    cpus: cpus().length,
    synthetic: true,
    build: {
      calls: records.length,
      meanPromptTokens: Math.round(promptTokens / records.length),
      seconds: round(buildS),
      cpuSeconds: round(buildCpuS),
      callsPerSecond: Math.round(records.length / buildS),
      callsPerCpuSecond: Math.round(records.length / buildCpuS),
      promptTokensPerSecond: Math.round(promptTokens / buildS),
      radixNodes: nodes,
      treeHeapMiB: mib(heapTrees),
      rssMiB: mib(rss),
    },
    batch: {
      layout: "tree",
      seconds: round(batchS),
      cpuSeconds: round(batchCpuS),
      rows: batch.stats.rows,
      emittedTokens: batch.stats.emittedTokens,
      tokensPerSecond: Math.round(batch.stats.emittedTokens / batchS),
      tokensPerCpuSecond: Math.round(batch.stats.emittedTokens / batchCpuS),
    },
    dedup: dedupResults,
    recorded,
    targets: { callsPerSecond: 20_000, treeOverFlatOnFivePlusTurns: 1 / 3 },
  };
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2) + "\n");
  console.log(JSON.stringify(result, null, 2));
}

main();
