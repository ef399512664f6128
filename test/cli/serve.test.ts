import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import { DEFAULT_SAMPLING, isHotSwappable } from "../../src/engine/types.js";
import { writeRandomModelDir, type RandomModelSpec } from "../../src/weights/random-model.js";
import { REPO_ROOT, runCli } from "../setup/cli.js";
import { killChild } from "../../src/core/kill-child.js";

const root = mkdtempSync(join(tmpdir(), "hrl-cli-serve-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const small: RandomModelSpec = { modelType: "qwen3", hiddenSize: 32, numLayers: 1, numHeads: 2, numKvHeads: 1, intermediateSize: 64, seed: 1 };

describe("harnessrl serve (the compiled CLI)", () => {
  it("serves a model directory until SIGTERM: nodes sample through llamacpp-http with the generation token, the trainer pushes a version with the admin token", async () => {
    const base = join(root, "base");
    writeRandomModelDir(base, small);
    const env = { ...process.env, HARNESSRL_SERVE_TOKEN: "cli-gen-token-0123456789", HARNESSRL_SERVE_ADMIN_TOKEN: "cli-admin-token-0123456789" };
    const child = spawn(process.execPath, [join(REPO_ROOT, "dist", "cli", "main.js"), "serve", "--model-dir", base, "--port", "0", "--threads", "1", "--sequences", "2", "--ctx", "1024", "--cache", join(root, "cache")], { cwd: REPO_ROOT, env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      const deadline = Date.now() + 60_000;
      let url: string | undefined;
      while (!url && Date.now() < deadline && child.exitCode === null) {
        url = /engine spec for nodes: llamacpp-http:(\S+)/.exec(stdout)?.[1];
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(url, `${stdout}\n${stderr}`).toBeDefined();
      expect(stdout).not.toContain("cli-admin-token");
      const saved = { gen: process.env.HARNESSRL_SERVE_TOKEN, admin: process.env.HARNESSRL_SERVE_ADMIN_TOKEN };
      process.env.HARNESSRL_SERVE_TOKEN = env.HARNESSRL_SERVE_TOKEN;
      process.env.HARNESSRL_SERVE_ADMIN_TOKEN = env.HARNESSRL_SERVE_ADMIN_TOKEN;
      try {
        const engine = await createEngine(`llamacpp-http:${url ?? ""}`);
        if (!isHotSwappable(engine)) throw new Error("not hot-swappable");
        const r = await engine.generate({ promptTokens: [257, 10], params: { ...DEFAULT_SAMPLING, maxTokens: 3, seed: 2 } });
        expect(r.policyVersion).toBe(0);
        expect(r.engineInstance).toMatch(/^llamacpp@/);
        const next = join(root, "v1");
        writeRandomModelDir(next, { ...small, seed: 2 });
        await engine.loadPolicy(next, 1);
        const r2 = await engine.generate({ promptTokens: [257, 10], params: { ...DEFAULT_SAMPLING, maxTokens: 3, seed: 2 } });
        expect([r2.policyVersion, r2.engineInstance]).toEqual([1, r.engineInstance]);
        await engine.close();
      } finally {
        process.env.HARNESSRL_SERVE_TOKEN = saved.gen;
        process.env.HARNESSRL_SERVE_ADMIN_TOKEN = saved.admin;
        if (saved.gen === undefined) delete process.env.HARNESSRL_SERVE_TOKEN;
        if (saved.admin === undefined) delete process.env.HARNESSRL_SERVE_ADMIN_TOKEN;
      }
      expect(stdout).toMatch(/policy version 1 served/);
      killChild(child, "SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      killChild(child, "SIGKILL");
    }
  }, 120_000);

  it("refuses to listen beyond loopback without a generation token, in one line", async () => {
    const r = await runCli(["serve", "--model-dir", join(root, "base"), "--host", "0.0.0.0", "--port", "0"]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("[serve_token_required]");
  });
});
