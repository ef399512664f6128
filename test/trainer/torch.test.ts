import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { InfraError } from "../../src/core/errors.js";
import { createTrainer } from "../../src/trainer/index.js";
import { TorchTrainer } from "../../src/trainer/torch/torch-trainer.js";
import type { TokenScores } from "../../src/trainer/types.js";
import { WorkerClient } from "../../src/trainer/worker-client.js";
import { trainerContracts } from "./contract.js";
import { batch, branchingPaths, flatRow, tokensFrom } from "./fixtures.js";

trainerContracts("torch (real worker process)", () => createTrainer("torch", { threads: 1 }), ["critic", "capo", "grad_sketch", "lora"]);

describe("torch worker process", () => {
  it("answers concurrent requests, each with its own result", async () => {
    const dir = mkdtempSync(join(tmpdir(), "harnessrl-conc-"));
    const trainer = await TorchTrainer.start({ threads: 1 });
    try {
      await trainer.init({ preset: "tiny-1m", seed: 2, out: join(dir, "m") });
      const batches = [0, 1, 2, 3].map((k) => batch([flatRow([257, ...tokensFrom(100 + k, 20 + 5 * k)])]));
      const sequential: TokenScores[] = [];
      for (const b of batches) sequential.push(await trainer.logprobs(b));
      const concurrent = await Promise.all(batches.map((b) => trainer.logprobs(b)));
      concurrent.forEach((c, k) => {
        expect(c.logprobs[0]?.length).toBe(21 + 5 * k);
        expect(Array.from(c.logprobs[0] ?? [])).toEqual(Array.from(sequential[k]?.logprobs[0] ?? []));
      });
    } finally {
      await trainer.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("turns a killed worker into retryable InfraErrors for pending and later requests", async () => {
    const { client } = await WorkerClient.start({ threads: 1 });
    const dir = mkdtempSync(join(tmpdir(), "harnessrl-kill-"));
    try {
      await client.request("init", { preset: "tiny-10m", seed: 1, out: join(dir, "m") });
      const row = flatRow(branchingPaths()[0] as number[]);
      const pending = client.request("logprobs", { row_lengths: [row.tokens.length] }, new Map([["tokens", row.tokens], ["parent", row.parent], ["positions", row.positions]]));
      process.kill(client.pid as number, "SIGKILL");
      const err = await pending.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InfraError);
      expect(err).toMatchObject({ code: "worker_died", retryable: true });
      await expect(client.request("hello", {})).rejects.toMatchObject({ code: "worker_died" });
      expect(client.alive).toBe(false);
    } finally {
      await client.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("stops a worker that exceeds a request timeout", async () => {
    const { client } = await WorkerClient.start({ threads: 1 });
    const dir = mkdtempSync(join(tmpdir(), "harnessrl-timeout-"));
    try {
      const err = await client.request("init", { preset: "tiny-10m", seed: 1, out: join(dir, "m") }, undefined, { timeoutMs: 1 }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "worker_timeout", retryable: true });
      await client.kill();
      expect(client.alive).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reports an interpreter that cannot start", async () => {
    const err = await WorkerClient.start({ python: "/nonexistent/python3" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InfraError);
    expect(err).toMatchObject({ code: "worker_spawn_failed" });
  });

  it("shuts down cleanly on close", async () => {
    const { client } = await WorkerClient.start({ threads: 1 });
    await client.close();
    expect(client.alive).toBe(false);
    await expect(client.request("hello", {})).rejects.toMatchObject({ code: "worker_died" });
  });
});
