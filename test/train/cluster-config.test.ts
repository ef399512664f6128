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

  it("refuses an engine the nodes cannot share or the trainer cannot push to, and an in-memory central store, with unsupported_cluster_run", () => {
    expect(refusal({ engine: { kind: "llamacpp" } })).toMatchObject({ code: "unsupported_cluster_run", fault: "user", message: expect.stringMatching(/needs engine\.kind: llamacpp-http .* not llamacpp/) });
    expect(refusal({ engine: { kind: "vllm", url: "http://10.0.0.5:8000" } })).toMatchObject({ code: "unsupported_cluster_run", message: expect.stringMatching(/not vllm/) });
    expect(refusal({ cluster: { ...queue, engines: ["llamacpp-http:http://10.0.0.5:8500", "vllm:http://10.0.0.7:8000"] } })).toMatchObject({ code: "unsupported_cluster_run", message: expect.stringMatching(/cluster\.engines\[1\] is vllm/) });
    expect(refusal({ cluster: { ...queue, engines: ["oracle"] } })).toMatchObject({ code: "unsupported_cluster_run", message: expect.stringMatching(/cluster\.engines\[0\] is oracle/) });
    expect(refusal({ cluster: { ...queue, store: "memory" } })).toMatchObject({ code: "unsupported_cluster_run", message: expect.stringMatching(/cluster\.store is memory/) });
  });

  it("makes runTraining refuse before it starts anything", async () => {
    const runDir = join(root, "run");
    await expect(runTraining(buildRunContext(config({ engine: { kind: "llamacpp" } }), { runDir }), () => undefined)).rejects.toMatchObject({ code: "unsupported_cluster_run" });
    expect(existsSync(join(runDir, "state.json"))).toBe(false);
    expect(existsSync(join(runDir, "cluster-run.json"))).toBe(false);
  });
});
