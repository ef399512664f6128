import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildRunContext } from "../../src/run/context.js";
import { checkClusterTraining, clusterTrainingIssue } from "../../src/train/cluster-launch.js";
import { parseRunConfig } from "../../src/train/config.js";
import { runTraining } from "../../src/train/orchestrator.js";

describe("run configs with a cluster: section that cannot train on a cluster", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-cluster-config-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const served = { kind: "llamacpp-http", url: "http://10.0.0.5:8500" };
  const queue = { queue: "redis://:secret@10.0.0.1:6379", store: "postgres://u:p@10.0.0.1/runs" };
  const config = (over: Record<string, unknown>): ReturnType<typeof parseRunConfig> => parseRunConfig({ model: { preset: "tiny-1m" }, harnesses: ["chat-agent"], tasks: { train: "arith:train" }, engine: served, cluster: queue, ...over });
  const refusal = (over: Record<string, unknown>): unknown => {
    try {
      checkClusterTraining(config(over));
    } catch (e) {
      return e;
    }
    return null;
  };

  it("accepts a served engine, with or without more llamacpp-http endpoints, in sync and async mode; no cluster section is not its affair", () => {
    expect(clusterTrainingIssue(config({}))).toBeNull();
    expect(clusterTrainingIssue(config({ mode: "async", max_staleness: 0 }))).toBeNull();
    expect(clusterTrainingIssue(config({ cluster: { ...queue, engines: ["llamacpp-http:http://10.0.0.5:8500", "llamacpp-http:http://10.0.0.6:8500"] } }))).toBeNull();
    expect(clusterTrainingIssue(config({ engine: { kind: "llamacpp" }, cluster: undefined }))).toBeNull();
  });

  const vllm = { kind: "vllm", url: "http://10.0.0.5:8000", reload_url: "http://10.0.0.5:9000/reload" };
  const remoteEngines = ["vllm:http://10.0.0.5:8000?model_dir=/models/policy", "sglang:http://10.0.0.6:30000?model_dir=/models/policy"];

  it("accepts vLLM and SGLang endpoints in sync mode when each names the nodes' tokenizer directory and vLLM has a reload hook", () => {
    expect(clusterTrainingIssue(config({ engine: vllm, cluster: { ...queue, engines: remoteEngines } }))).toBeNull();
    expect(clusterTrainingIssue(config({ engine: { kind: "sglang", url: "http://10.0.0.6:30000" }, cluster: { ...queue, engines: [remoteEngines[1]] } }))).toBeNull();
    // A served engine with more endpoints of any pushable kind; another vLLM than the run's own brings its own hook.
    expect(clusterTrainingIssue(config({ cluster: { ...queue, engines: ["llamacpp-http:http://10.0.0.5:8500", "vllm:http://10.0.0.7:8000?model_dir=/m&reload_url=http%3A%2F%2F10.0.0.7%3A9000%2Freload"] } }))).toBeNull();
  });

  it("refuses an engine the nodes cannot share or the trainer cannot push to, and an in-memory central store, with unsupported_cluster_run", () => {
    expect(refusal({ engine: { kind: "llamacpp" } })).toMatchObject({ code: "unsupported_cluster_run", fault: "user", message: expect.stringMatching(/engine\.kind llamacpp-http .* not llamacpp/) });
    expect(refusal({ cluster: { ...queue, engines: ["oracle"] } })).toMatchObject({ code: "unsupported_cluster_run", message: expect.stringMatching(/cluster\.engines\[0\] is oracle/) });
    expect(refusal({ cluster: { ...queue, store: "memory" } })).toMatchObject({ code: "unsupported_cluster_run", message: expect.stringMatching(/cluster\.store is memory/) });
  });

  it("refuses vLLM / SGLang endpoints that nodes could not parse with, that the trainer could not reload, or whose calls' versions would be guessed", () => {
    const refused = (over: Record<string, unknown>, why: RegExp): void => expect(refusal(over)).toMatchObject({ code: "unsupported_cluster_run", message: expect.stringMatching(why) });
    // No endpoint list: the nodes would not know where their tokenizer is.
    refused({ engine: vllm }, /list the endpoints in cluster\.engines as vllm:<url>\?model_dir=/);
    refused({ cluster: { ...queue, engines: ["llamacpp-http:http://10.0.0.5:8500", "vllm:http://10.0.0.7:8000"] } }, /cluster\.engines\[1\] \(vllm\) needs model_dir=/);
    refused({ engine: { kind: "vllm", url: vllm.url }, cluster: { ...queue, engines: remoteEngines } }, /set engine\.reload_url/);
    refused({ engine: vllm, cluster: { ...queue, engines: [...remoteEngines, "vllm:http://10.0.0.7:8000?model_dir=/m"] } }, /cluster\.engines\[2\] \(vllm\) needs reload_url=/);
    refused({ engine: vllm, cluster: { ...queue, engines: ["vllm:http://10.0.0.5:8000?model_dir=/m&version=3"] } }, /sets version=/);
    refused({ engine: vllm, cluster: { ...queue, engines: remoteEngines }, mode: "async", max_staleness: 1 }, /async mode on a cluster needs llamacpp-http endpoints/);
    refused({ engine: vllm, model: { preset: "tiny-1m", lora: {} }, cluster: { ...queue, engines: remoteEngines } }, /LoRA policies on vllm\/sglang endpoints/);
  });

  it("refuses reload_url on an engine that is not vLLM when the config is parsed", () => {
    expect(() => config({ engine: { ...served, reload_url: "http://10.0.0.5:9000/reload" } })).toThrow(/reload_url is vLLM's deployment hook/);
  });

  it("makes runTraining refuse before it starts anything", async () => {
    const runDir = join(root, "run");
    await expect(runTraining(buildRunContext(config({ engine: { kind: "llamacpp" } }), { runDir }), () => undefined)).rejects.toMatchObject({ code: "unsupported_cluster_run" });
    expect(existsSync(join(runDir, "state.json"))).toBe(false);
    expect(existsSync(join(runDir, "cluster-run.json"))).toBe(false);
  });
});
