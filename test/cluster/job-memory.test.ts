import { describe, expect, it } from "vitest";
import { parseRolloutJob, type RolloutJob } from "../../src/cluster/job.js";
import { jobMemoryBytes } from "../../src/cluster/node.js";
import { jobsOfPlan } from "../../src/cluster/plan.js";
import { parseRunConfig } from "../../src/train/config.js";
import { loadSuite } from "../../src/tasks/registry.js";

/**
 * A rollout job's sandbox memory limit (`settings.memoryMb`): the bounds the queue's schema holds every payload to,
 * and what a node gives a job under its cap (`--max-memory-mb`).
 */
const MiB = 1024 * 1024;

async function aJob(settings: Partial<RolloutJob["settings"]> = {}): Promise<Record<string, unknown>> {
  const suite = await loadSuite("arith:test?n=1");
  const [job] = jobsOfPlan({ tasks: suite.tasks, harnesses: ["chat-agent"], samples: 1, idPrefix: "mem" }, { runId: "mem", engine: "oracle", store: null, policyVersion: null, sampling: { temperature: 1, maxTokens: 64 }, settings: { maxTurns: 2, maxTokens: 64, harnessTimeoutMs: 30_000, ...settings } });
  // Through JSON, as it crosses the queue.
  return JSON.parse(JSON.stringify(job)) as Record<string, unknown>;
}

describe("a rollout job's memoryMb", () => {
  it("is optional, and kept when within 16..1048576 MiB", async () => {
    expect(parseRolloutJob(await aJob()).settings.memoryMb).toBeUndefined();
    for (const mb of [16, 1024, 1_048_576]) expect(parseRolloutJob(await aJob({ memoryMb: mb })).settings.memoryMb).toBe(mb);
  });

  it.each([
    [15, /settings\.memoryMb: Too small/],
    [1_048_577, /settings\.memoryMb: Too big/],
    [0, /settings\.memoryMb: Too small/],
    [-64, /settings\.memoryMb: Too small/],
    [64.5, /settings\.memoryMb: .*int/],
    ["64", /settings\.memoryMb: .*number/],
    [null, /settings\.memoryMb: .*number/],
  ])("refuses %j with invalid_cluster_job", async (bad, why) => {
    const job = await aJob();
    (job.settings as Record<string, unknown>).memoryMb = bad;
    let err: unknown;
    try {
      parseRolloutJob(job);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: "invalid_cluster_job", fault: "user" });
    expect((err as Error).message).toMatch(why);
  });

  it("a run config's rollout.memory_mb has the same bounds", () => {
    const base = { model: { preset: "tiny-1m" }, harnesses: ["chat-agent"], tasks: { train: "arith:train?n=2" } };
    expect(parseRunConfig({ ...base, rollout: { memory_mb: 16 } }).rollout.memory_mb).toBe(16);
    expect(parseRunConfig(base).rollout.memory_mb).toBe(1024);
    for (const bad of [15, 1_048_577]) expect(() => parseRunConfig({ ...base, rollout: { memory_mb: bad } })).toThrow(/rollout\.memory_mb/);
  });
});

describe("a node's memory limit for a job (jobMemoryBytes)", () => {
  it("gives a job what it asks for, up to the cap", () => {
    expect(jobMemoryBytes(64, undefined)).toBe(64 * MiB);
    expect(jobMemoryBytes(100_000, undefined)).toBe(100_000 * MiB);
    expect(jobMemoryBytes(512, 512)).toBe(512 * MiB);
    expect(jobMemoryBytes(64, 512)).toBe(64 * MiB);
  });

  it("refuses (null) a job asking more than the cap: no clamping", () => {
    expect(jobMemoryBytes(513, 512)).toBeNull();
    expect(jobMemoryBytes(4096, 16)).toBeNull();
  });

  it("gives a job without a limit the runner's 2 GiB default, lowered to the cap", () => {
    expect(jobMemoryBytes(undefined, undefined)).toBe(2048 * MiB);
    expect(jobMemoryBytes(undefined, 4096)).toBe(2048 * MiB);
    expect(jobMemoryBytes(undefined, 256)).toBe(256 * MiB);
  });
});

describe("a rollout job's sampling.topK", () => {
  it("is optional (jobs from runners before the field), kept when given, and bounded", async () => {
    const job = await aJob();
    expect(parseRolloutJob(job).sampling.topK).toBeUndefined();
    (job.sampling as Record<string, unknown>).topK = 5000;
    expect(parseRolloutJob(job).sampling).toEqual({ temperature: 1, maxTokens: 64, topK: 5000 });
    (job.sampling as Record<string, unknown>).topK = -1;
    expect(() => parseRolloutJob(job)).toThrow(/sampling\.topK/);
  });
});

describe("a rollout job's samplingSeeds (an evaluation's common random numbers)", () => {
  it("travels in the job's settings when the plan has a key, and is absent otherwise", async () => {
    const suite = await loadSuite("arith:test?n=1");
    const common = { runId: "crn", engine: "oracle", store: null, policyVersion: null, sampling: { temperature: 1, maxTokens: 64 }, settings: { maxTurns: 2, maxTokens: 64, harnessTimeoutMs: 30_000 } };
    const [keyed] = jobsOfPlan({ tasks: suite.tasks, harnesses: ["chat-agent"], samples: 1, idPrefix: "crn", samplingSeeds: "eval-seed-3" }, common);
    expect(parseRolloutJob(JSON.parse(JSON.stringify(keyed))).settings.samplingSeeds).toBe("eval-seed-3");
    expect(parseRolloutJob(await aJob()).settings.samplingSeeds).toBeUndefined();
  });

  it.each([[""], ["x".repeat(201)], [7]])("refuses %j with invalid_cluster_job", async (bad) => {
    const job = await aJob();
    (job.settings as Record<string, unknown>).samplingSeeds = bad;
    expect(() => parseRolloutJob(job)).toThrow(/settings\.samplingSeeds/);
  });
});
