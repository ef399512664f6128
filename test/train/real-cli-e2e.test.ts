import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { stringify } from "yaml";
import { LlamaCppEngine } from "../../src/engine/llamacpp/engine.js";
import type { GenerateRequest, GenerateResult } from "../../src/engine/types.js";
import { getHarness } from "../../src/harness/index.js";
import { buildRunContext } from "../../src/run/context.js";
import { openStore } from "../../src/store/registry.js";
import type { Store } from "../../src/store/types.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { buildBatch } from "../../src/batch/build.js";
import { buildForests } from "../../src/trees/forest.js";
import { batchForRollouts } from "../../src/train/batches.js";
import { loadRunConfig } from "../../src/train/config.js";
import { runTraining, type RunSummary } from "../../src/train/orchestrator.js";
import { createTrainer } from "../../src/trainer/registry.js";
import { noiseTask } from "./noise-tasks.js";

/**
 * CI's end-to-end run through a real harness CLI: pi (the fastest real CLI to start, ~1.3k-token first prompt) drives
 * a Qwen3-vocabulary model (`qwen3-tiny`: Qwen3's tokenizer and official template) served by llama.cpp, in bwrap
 * sandboxes, through the capture proxy. An oracle warm start solves calcrun tasks through pi's own shell tool
 * (multi-turn sessions); then two tree-GRPO steps on tasks whose verifier scores with noise (a fresh model solves
 * nothing, so real rewards would have no variance; noise does, so advantages are non-zero and the policy must move).
 * Checks: every trained token id is the engine's for the same call, trees are built from pi's calls and share their
 * prefixes, the policy changes at every step that had non-zero advantages.
 */

interface EngineCall {
  prompt: number[];
  completion: number[];
}

/** A model directory's weights (one file or shards), as one buffer. */
const weights = (dir: string): Buffer => Buffer.concat(readdirSync(dir).filter((f) => f.endsWith(".safetensors")).sort().map((f) => readFileSync(join(dir, f))));
/** How long the run may take before the test reports it as stalled (it takes 2–7 min on a loaded 2-core machine). */
const STALL_MS = Number(process.env.HARNESSRL_E2E_STALL_MS ?? 16 * 60_000);

/** Each recorded model call of the run so far (rollout, when, how long, how far the engine got): where a stall sat. */
function callTimeline(runDir: string): string {
  const lines: string[] = [];
  for (const db of ["demos.sqlite", "records.sqlite"]) {
    if (!existsSync(join(runDir, db))) continue;
    const store = openStore(`sqlite:${join(runDir, db)}`);
    try {
      for (const c of store.listCalls({})) lines.push(`${db} ${c.rolloutId} ${c.status} ${c.finishReason ?? "-"} prompt ${c.promptTokens.length} ${JSON.stringify(c.timings)}`);
    } finally {
      store.close();
    }
  }
  return lines.length > 0 ? lines.join("\n") : "no model call was recorded";
}

const readJsonl = <T>(path: string): T[] => readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l) as T);

describe("training end to end through pi with a Qwen3-vocabulary model (llama.cpp, bwrap, torch)", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-real-e2e-"));
  const runDir = join(root, "run");
  const engineCalls = new Map<string, EngineCall>();
  let summary: RunSummary;
  let store: Store;
  let demos: Store;

  beforeAll(async () => {
    const t0 = Date.now();
    const progress: string[] = [];
    const log = (line: string): void => {
      const stamped = `[${((Date.now() - t0) / 1000).toFixed(0)}s] ${line}`;
      progress.push(stamped);
      console.error(stamped);
    };
    // A run that stalls fails here, before the hook's timeout, saying where it stood: CI shows a failure's message,
    // not the progress lines printed before it.
    let stall: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      stall = setTimeout(() => reject(new Error(`the run stalled (${STALL_MS / 60_000} min)\n${progress.join("\n")}\n${callTimeline(runDir)}`)), STALL_MS);
    });
    const race = <T>(p: Promise<T>): Promise<T> => Promise.race([p, stalled]);
    try {
      await race(getHarness("pi").ensureInstalled());
      log("pi is installed");
      const model = join(root, "model");
      const trainer = await createTrainer("torch");
      try {
        await race(trainer.init({ preset: "qwen3-tiny", seed: 3, out: model }));
      } finally {
        await trainer.close();
      }
      log("qwen3-tiny initialised");
      // Observe (not replace) every llama.cpp call: what the engine was given and what it sampled.
      const generate = LlamaCppEngine.prototype.generate;
      vi.spyOn(LlamaCppEngine.prototype, "generate").mockImplementation(async function (this: LlamaCppEngine, request: GenerateRequest): Promise<GenerateResult> {
        const result = await generate.call(this, request);
        engineCalls.set(request.context?.callId ?? "?", { prompt: [...request.promptTokens], completion: [...result.tokens] });
        return result;
      });
      const suite = join(root, "suite");
      await writeNativeSuite([0, 1].map((i) => noiseTask(i, "train")), join(suite, "train"));
      const configPath = join(root, "run.yaml");
      writeFileSync(
        configPath,
        stringify({
          name: "real-pi-e2e",
          seed: 1,
          model: { dir: model },
          engine: { kind: "llamacpp", threads: 1, sequences: 4, context_size: 4096 },
          trainer: { threads: 1 },
          sampling: { temperature: 1, max_tokens: 8 },
          rollout: { sandbox: "bwrap", concurrency: 4, max_turns: 3, timeout_s: 150, memory_mb: 1024 },
          harnesses: ["pi"],
          tasks: { train: `dir:${join(suite, "train")}` },
          warm_start: { demos: "calcrun:train?n=1&seed=2", epochs: 1, batch_tokens: 2048, lr: 0.001 },
          algorithm: { lr: 0.01, row_tokens: 2048, batch_tokens: 2048 },
          budget: { steps: 2, tasks_per_step: 2, samples: 2 },
        }),
      );
      summary = await race(runTraining(buildRunContext(loadRunConfig(configPath), { runDir, configPath }), log));
    } finally {
      clearTimeout(stall);
    }
    store = openStore(`sqlite:${join(runDir, "records.sqlite")}`);
    demos = openStore(`sqlite:${join(runDir, "demos.sqlite")}`);
  }, STALL_MS + 120_000);

  afterAll(() => {
    vi.restoreAllMocks();
    store?.close();
    demos?.close();
    if (!process.env.HARNESSRL_KEEP_TEST_RUN) rmSync(root, { recursive: true, force: true });
  });

  const rlRollouts = (): RolloutResult[] => readJsonl<RolloutResult>(join(runDir, "rollouts.jsonl")).filter((r) => /^s\d+-/.test(r.rolloutId));

  it("warm-starts on oracle demonstrations that solved calcrun through pi's own shell tool, in multi-turn sessions packed as trees", () => {
    const warm = readJsonl<Record<string, number | string>>(join(runDir, "metrics.jsonl")).find((m) => m.phase === "warm_start");
    expect(warm?.demoRollouts).toBeGreaterThan(0);
    expect(warm?.trainableTokens).toBeGreaterThan(0);
    const calls = demos.listCalls({});
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(calls.every((c) => c.harness === "pi")).toBe(true);
    expect(calls.some((c) => c.response?.toolCalls?.some((t) => t.name === "bash"))).toBe(true);
    // pi's follow-up calls extend their parent token for token, without a break: the oracle reasons before each
    // turn, so Qwen3's template keeps every reasoning block in later calls (an empty one it would drop).
    const byId = new Map(calls.map((c) => [c.callId, c]));
    const followUps = calls.filter((c) => c.messages.some((m) => m.role === "assistant"));
    expect(followUps.length).toBeGreaterThan(0);
    for (const c of followUps) {
      expect(c.break, c.callId).toBeNull();
      const p = byId.get(c.parentCallId ?? "");
      expect(p, c.callId).toBeDefined();
      const extends_ = c.promptTokens.slice(0, p!.promptTokens.length + p!.completionTokens.length).join() === [...p!.promptTokens, ...p!.completionTokens].join();
      expect(extends_, c.callId).toBe(true);
    }
    // The session's calls form one tree in one row. Every turn extends the previous one, so the tree is one path: the
    // row holds the last call's tokens once, where training each call on its own would repeat pi's system prompt and
    // the task in every call (measured: 1,478 tokens for the session's calls, which are 2,872 tokens call by call).
    const built = buildBatch(buildForests(calls, demos.listSessions()), { layout: "tree", tokenBudget: 4096, filter: { trajectories: "all" } });
    expect(built.stats.calls).toBe(calls.length);
    expect(built.batch.rows).toHaveLength(1);
    const longest = Math.max(...calls.map((c) => c.promptTokens.length + c.completionTokens.length));
    const perCall = calls.reduce((n, c) => n + c.promptTokens.length + c.completionTokens.length, 0);
    expect(built.stats.emittedTokens).toBe(longest);
    expect(built.stats.emittedTokens).toBeLessThan(0.6 * perCall);
  });

  it("runs two RL steps through pi and changes the policy at each (non-zero advantages)", () => {
    expect(summary.steps).toBe(2);
    const rl = readJsonl<Record<string, number | string>>(join(runDir, "metrics.jsonl")).filter((m) => m.phase === "rl");
    expect(rl).toHaveLength(2);
    const versions = [0, 1, 2, 3].map((v) => join(runDir, "policy", `v${String(v).padStart(4, "0")}`));
    for (const [i, m] of rl.entries()) {
      expect(m["train/skipped"]).toBe(0);
      expect(m["adv/learnability"] as number).toBeGreaterThan(0);
      expect(m["tokens/trainable"] as number).toBeGreaterThan(0);
      expect(weights(versions[i + 1]!).equals(weights(versions[i + 2]!))).toBe(false);
    }
  });

  it("trains exactly the engine's token ids, call by call, in trees built from pi's calls", () => {
    const results = rlRollouts();
    expect(results.length).toBe(2 * 2 * 2);
    const built = batchForRollouts(store, results, { rowTokens: 2048 });
    expect(built.index.calls.length).toBeGreaterThanOrEqual(results.length);
    for (const c of built.index.calls) expect(engineCalls.has(c.callId), c.callId).toBe(true);
    for (const path of built.index.paths) {
      const row = built.batch.rows[path.row]!;
      const ids: number[] = [];
      for (let i = path.leafToken; i >= 0; i = row.parent[i]!) ids.push(row.tokens[i]!);
      ids.reverse();
      const leaf = engineCalls.get(path.leafCallId)!;
      expect(ids).toEqual([...leaf.prompt, ...leaf.completion]);
    }
    // Qwen3 ids (vocabulary 151,936), not bytes; a GRPO group's sessions share pi's prompt once per tree.
    expect(built.batch.rows.some((row) => row.tokens.some((t) => t > 1000))).toBe(true);
    expect(built.stats.sharedRootTokens).toBeGreaterThan(1000);
    expect(built.stats.emittedTokens).toBeLessThan(built.stats.flatTokens / 2);
    for (const c of built.index.calls) {
      const rec = store.getCall(c.callId);
      expect(rec?.harness).toBe("pi");
      expect(rec?.promptTokens).toEqual(engineCalls.get(c.callId)!.prompt);
      expect(rec?.completionTokens).toEqual(engineCalls.get(c.callId)!.completion);
    }
  });
});
