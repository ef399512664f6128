import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { ClusterDispatcher } from "../../src/cluster/dispatch.js";
import { RolloutNode } from "../../src/cluster/node.js";
import { LlamaCppEngine } from "../../src/engine/llamacpp/engine.js";
import { llamaCppOptions } from "../../src/engine/llamacpp/options.js";
import { EngineService } from "../../src/engine/service/server.js";
import { parseEngineSpec } from "../../src/engine/spec.js";
import { buildRunContext } from "../../src/run/context.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { loadRunConfig } from "../../src/train/config.js";
import { setFaultHandler } from "../../src/train/fault.js";
import { runTraining, type RunSummary } from "../../src/train/orchestrator.js";
import { TorchTrainer } from "../../src/trainer/torch/torch-trainer.js";
import { usePrivateRedis } from "../cluster/private-redis.js";
import { noiseTask } from "./noise-tasks.js";

// `harnessrl train` with a cluster: section. A private redis-server (the project's starter), `harnessrl serve`'s
// service on a tiny preset, two rollout nodes (real bwrap sandboxes and capture proxies) and a central SQLite store.
// The first run is stopped after step 2 trained but before it committed; the rerun resumes it.
process.env.HARNESSRL_HARNESS_CACHE ??= join(process.cwd(), ".cache", "harnesses");

const cluster = usePrivateRedis("hrl-train-cluster-");
const root = cluster.root;

describe("train on a cluster: two rollout nodes, a served policy, a central store, a stop mid-step and a resume", () => {
  let engine: LlamaCppEngine;
  let service: EngineService;
  const nodes: RolloutNode[] = [];
  let summary: RunSummary;
  let interrupted: unknown;
  let central: SqliteStore;
  const runDir = join(root, "run");
  const centralFile = join(root, "central.sqlite");

  afterAll(async () => {
    setFaultHandler(null);
    delete process.env.HARNESSRL_FAULT;
    central?.close();
    for (const n of nodes) await n.drain().catch(() => undefined);
    await service?.close();
    await engine?.close();
    delete process.env.HARNESSRL_SERVE_TOKEN;
    delete process.env.HARNESSRL_SERVE_ADMIN_TOKEN;
  }, 60_000);

  beforeAll(async () => {
    const start = join(root, "start");
    const trainer = await TorchTrainer.start({ threads: 1 });
    try {
      await trainer.init({ preset: "tiny-1m", seed: 3, out: start });
    } finally {
      await trainer.close();
    }
    const spec = `llamacpp:${start}?threads=1&sequences=4&ctx=2048&cache=${join(root, "cache")}`;
    engine = await LlamaCppEngine.create(spec, llamaCppOptions(parseEngineSpec(spec)));
    service = new EngineService({ engine, modelDir: start, token: "cluster-gen-token", adminToken: "cluster-admin-token", uploadDir: join(root, "uploads") });
    const url = await service.listen(0, "127.0.0.1");
    process.env.HARNESSRL_SERVE_TOKEN = "cluster-gen-token";
    process.env.HARNESSRL_SERVE_ADMIN_TOKEN = "cluster-admin-token";
    // One slot each: a step's four jobs need both nodes.
    for (const nodeId of ["node-a", "node-b"]) {
      const node = new RolloutNode({ cluster: cluster.redis.url, capacity: 1, nodeId, workDir: join(root, nodeId), sandbox: "bwrap", lockMs: 10_000, heartbeatMs: 500, log: () => undefined });
      nodes.push(node);
      await node.start();
    }
    const suite = join(root, "suite");
    await writeNativeSuite([0, 1].map((i) => noiseTask(i, "train")), suite);
    const config = join(root, "cluster.yaml");
    writeFileSync(
      config,
      stringify({
        name: "cluster",
        seed: 2,
        model: { dir: start },
        engine: { kind: "llamacpp-http", url },
        sampling: { temperature: 1, max_tokens: 24 },
        rollout: { sandbox: "bwrap", concurrency: 2, max_turns: 2, timeout_s: 60, memory_mb: 1024 },
        harnesses: ["chat-agent"],
        tasks: { train: `dir:${suite}` },
        algorithm: { lr: 0.001 },
        budget: { steps: 2, tasks_per_step: 2, samples: 2 },
        cluster: { queue: cluster.redis.url, store: `sqlite:${centralFile}`, attempts: 2 },
      }),
    );
    const train = (): Promise<RunSummary> => runTraining(buildRunContext(loadRunConfig(config), { runDir, configPath: config }), () => undefined);
    // Stopped after step 2's rollouts were gathered and trained, its policy pushed and checkpoint written, before the
    // commit: the rerun redoes step 2 from step 1's state.
    process.env.HARNESSRL_FAULT = "after-checkpoint-write@2";
    setFaultHandler((point, step) => {
      throw new Error(`stopped at ${point}@${step}`);
    });
    interrupted = await train().then(
      () => null,
      (e: unknown) => e,
    );
    setFaultHandler(null);
    delete process.env.HARNESSRL_FAULT;
    summary = await train();
    central = new SqliteStore(centralFile, { readonly: true });
  }, 600_000);

  it("was stopped mid-step 2 and resumed to the planned steps, with the usual run files", () => {
    expect(String(interrupted)).toMatch(/stopped at after-checkpoint-write@2/);
    expect(summary).toMatchObject({ steps: 2, plannedSteps: 2, policyVersion: 2, timeCapped: false });
    for (const f of ["metrics.jsonl", "summary.json", "rollouts.jsonl", "state.json", "cluster-run.json"]) expect(existsSync(join(runDir, f)), f).toBe(true);
    const rl = readFileSync(join(runDir, "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, number | string>).filter((r) => r.phase === "rl");
    // Each step once (the interrupted attempt's line was never committed).
    expect(rl.map((r) => r.step)).toEqual([1, 2]);
    for (const r of rl) {
      expect(r).toMatchObject({ "cluster/failed_jobs": 0, "cluster/not_landed": 0, "cluster/stale_dropped": 0, "cluster/calls_off_job_version": 0 });
      expect(r["status/infra_error"]).toBeUndefined();
      expect(r["tokens/trainable"]).toBeGreaterThan(0);
    }
    // The served engine: v1 after step 1, v2 pushed before the stop, v1 again when the resumed run connected, v2.
    expect(engine.loadTimings.map((t) => t.version)).toEqual([0, 1, 2, 1, 2]);
  });

  it("trained each step on rollouts of both nodes, each landed once and run once (the resume re-added the same jobs)", async () => {
    const landed = central.listLandedRollouts();
    expect(landed).toHaveLength(8);
    expect(new Set(landed.map((r) => r.rolloutId)).size).toBe(8);
    expect(new Set(landed.map((r) => r.nodeId))).toEqual(new Set(["node-a", "node-b"]));
    // No rollout ran again after the resume: every landed attempt is the first, and the queue holds 8 completed jobs.
    expect(landed.every((r) => r.attempt === 1)).toBe(true);
    const dispatcher = await ClusterDispatcher.open(cluster.redis.url);
    try {
      expect(await dispatcher.counts()).toMatchObject({ completed: 8, failed: 0, waiting: 0, active: 0 });
    } finally {
      await dispatcher.close();
    }
    // rollouts.jsonl: the steps' results, each rollout once, exactly the landed ones.
    const results = readFileSync(join(runDir, "rollouts.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RolloutResult);
    expect(results).toHaveLength(8);
    expect(new Set(results.map((r) => r.rolloutId))).toEqual(new Set(landed.map((r) => r.rolloutId)));
  });

  it("records on every call the policy version of its step (v0 in step 1, v1 in step 2)", () => {
    const { key } = JSON.parse(readFileSync(join(runDir, "cluster-run.json"), "utf8")) as { key: string };
    for (const r of central.listLandedRollouts()) {
      const step = Number(new RegExp(`^s(\\d+)-${key}-`).exec(r.rolloutId)?.[1]);
      expect([1, 2]).toContain(step);
      const calls = central.listCalls({ rolloutId: r.rolloutId });
      expect(calls.length, r.rolloutId).toBeGreaterThan(0);
      for (const c of calls) {
        expect(c.policyVersion, r.rolloutId).toBe(step - 1);
        expect(c.engineInstance).toBe(engine.instanceId);
      }
    }
  });
});
