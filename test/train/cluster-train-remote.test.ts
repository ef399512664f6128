import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { redisOptionsOf } from "../../src/cluster/connection.js";
import { ROLLOUT_QUEUE, type RolloutJob } from "../../src/cluster/job.js";
import type { RolloutNode } from "../../src/cluster/node.js";
import { parseEngineSpec } from "../../src/engine/spec.js";
import { buildRunContext } from "../../src/run/context.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import { loadRunConfig } from "../../src/train/config.js";
import { runTraining, type RunSummary } from "../../src/train/orchestrator.js";
import { TINY_VOCAB } from "../../src/weights/random-model.js";
import { usePrivateRedis } from "../cluster/private-redis.js";
import { startFakeServer, type FakeServer } from "../engine/fake-inference-servers.js";
import { startNodes } from "./cluster-nodes.js";
import { noiseTask } from "./noise-tasks.js";
import { rlRows } from "./run-files.js";
import { initTinyPolicy } from "./served-policy.js";

// `harnessrl train` on a cluster whose nodes sample from vLLM and SGLang endpoints. No GPU server runs here: local HTTP
// servers with vLLM's and SGLang's documented shapes (test/engine/fake-inference-servers.ts) stand in for the model;
// everything else is real (redis-server, two rollout nodes with bwrap sandboxes and capture proxies, the torch
// trainer, a central SQLite store).
process.env.HARNESSRL_HARNESS_CACHE ??= join(process.cwd(), ".cache", "harnesses");

const cluster = usePrivateRedis("hrl-train-cluster-remote-");
const root = cluster.root;
let vllm: FakeServer;
let sglang: FakeServer;
/** The tiny-1m policy (v0), and a copy of it standing for the tokenizer directory every node has. */
const start = join(root, "start");
const nodeTokenizer = join(root, "node-tokenizer");
const nodes: RolloutNode[] = [];

beforeAll(async () => {
  await initTinyPolicy(start);
  cpSync(start, nodeTokenizer, { recursive: true });
  vllm = await startFakeServer("vllm", { vocabSize: TINY_VOCAB, stopIds: [258, 256] });
  sglang = await startFakeServer("sglang", { vocabSize: TINY_VOCAB, stopIds: [258, 256] });
  nodes.push(...(await startNodes(cluster.redis.url, root)));
  await writeNativeSuite([0, 1].map((i) => noiseTask(i, "train")), join(root, "suite"));
}, 300_000);

afterAll(async () => {
  for (const n of nodes) await n.drain().catch(() => undefined);
  await vllm?.close();
  await sglang?.close();
}, 60_000);

describe("sync training on a vLLM and an SGLang endpoint: each step's version reloaded on both before its jobs, every call stamped with it", () => {
  const runDir = join(root, "run");
  const centralFile = join(root, "central.sqlite");
  let summary: RunSummary;
  let central: SqliteStore;
  let jobs: RolloutJob[] = [];

  beforeAll(async () => {
    const config = join(root, "remote.yaml");
    writeFileSync(
      config,
      stringify({
        name: "remote",
        seed: 2,
        model: { dir: start },
        engine: { kind: "vllm", url: vllm.url, reload_url: `${vllm.url}/reload` },
        sampling: { temperature: 1, max_tokens: 16 },
        rollout: { sandbox: "bwrap", concurrency: 2, max_turns: 2, timeout_s: 60, memory_mb: 1024 },
        harnesses: ["chat-agent"],
        tasks: { train: `dir:${join(root, "suite")}` },
        algorithm: { lr: 0.001 },
        budget: { steps: 2, tasks_per_step: 2, samples: 2 },
        cluster: {
          queue: cluster.redis.url,
          store: `sqlite:${centralFile}`,
          attempts: 2,
          // The nodes read the tokenizer from their own copy; the trainer reloads both servers from its policy dirs.
          engines: [`vllm:${vllm.url}?model_dir=${nodeTokenizer}`, `sglang:${sglang.url}?model_dir=${nodeTokenizer}`],
        },
      }),
    );
    summary = await runTraining(buildRunContext(loadRunConfig(config), { runDir, configPath: config }), () => undefined);
    central = new SqliteStore(centralFile, { readonly: true });
    const queue = new Queue(ROLLOUT_QUEUE, { connection: redisOptionsOf(cluster.redis.url) });
    try {
      jobs = (await queue.getCompleted()).map((j) => j.data as RolloutJob);
    } finally {
      await queue.close();
    }
  }, 600_000);

  afterAll(() => central?.close());

  it("ran both steps with every rollout landed and trained", () => {
    expect(summary).toMatchObject({ steps: 2, plannedSteps: 2, policyVersion: 2 });
    const rl = rlRows(runDir);
    expect(rl.map((r) => r.step)).toEqual([1, 2]);
    for (const r of rl) {
      expect(r).toMatchObject({ "cluster/failed_jobs": 0, "cluster/not_landed": 0, "cluster/stale_dropped": 0, "cluster/calls_off_job_version": 0 });
      expect(r["tokens/trainable"]).toBeGreaterThan(0);
    }
    expect(central.listLandedRollouts()).toHaveLength(8);
  });

  it("reloaded each server from the trainer's policy directory of v1 before step 2 (vLLM through its hook, SGLang through update_weights_from_disk)", () => {
    const v1 = vllm.reloads.find((r) => r.version === 1);
    expect(v1?.model_path).toBeDefined();
    expect(existsSync(join(v1!.model_path, "config.json"))).toBe(true);
    expect(sglang.reloads.map((r) => Number(r.version))).toContain(1);
    expect(sglang.reloads.find((r) => Number(r.version) === 1)?.model_path).toBe(v1!.model_path);
    // v0 is what the servers were started on: nothing was reloaded for it.
    expect([...vllm.reloads, ...sglang.reloads].some((r) => Number(r.version) === 0)).toBe(false);
  });

  it("gave each job its step's version in the engine spec, round-robin over both endpoints, with the nodes' tokenizer directory", () => {
    expect(jobs).toHaveLength(8);
    for (const job of jobs) {
      const spec = parseEngineSpec(job.engine);
      expect(["vllm", "sglang"]).toContain(spec.kind);
      expect(spec.options).toMatchObject({ model_dir: nodeTokenizer, version: String(job.policyVersion) });
    }
    expect(new Set(jobs.map((j) => parseEngineSpec(j.engine).kind))).toEqual(new Set(["vllm", "sglang"]));
    expect(new Set(jobs.map((j) => j.policyVersion))).toEqual(new Set([0, 1]));
  });

  it("records on every call its step's version and the server that sampled it", () => {
    const { key } = JSON.parse(readFileSync(join(runDir, "cluster-run.json"), "utf8")) as { key: string };
    const instances = new Set<string>();
    for (const r of central.listLandedRollouts()) {
      const step = Number(new RegExp(`^s(\\d+)-${key}-`).exec(r.rolloutId)?.[1]);
      const calls = central.listCalls({ rolloutId: r.rolloutId });
      expect(calls.length, r.rolloutId).toBeGreaterThan(0);
      for (const c of calls) {
        expect(c.policyVersion, r.rolloutId).toBe(step - 1);
        instances.add(c.engineInstance ?? "");
      }
    }
    expect(instances).toEqual(new Set([vllm.url, sglang.url]));
  });
});
