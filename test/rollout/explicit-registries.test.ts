import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const dist = (path: string): string => pathToFileURL(join(ROOT, "dist", path)).href;

/** Runs an ES module script in a fresh Node process (the compiled dist/, as users run it); its stdout is one JSON line. */
function node(script: string): Promise<{ code: number | null; out: unknown; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out: stdout.trim() ? (JSON.parse(stdout.trim().split("\n").at(-1)!) as unknown) : null, stderr }));
  });
}

describe("registries are filled explicitly, never by import side effects", () => {
  it("a process that imports every command and every kind's module but does not call registerBuiltins() has empty registries", async () => {
    const r = await node(`
      await import(${JSON.stringify(dist("cli/commands/index.js"))});
      const { engines } = await import(${JSON.stringify(dist("engine/index.js"))});
      const { harnesses, getHarness } = await import(${JSON.stringify(dist("harness/index.js"))});
      const { sandboxBackends } = await import(${JSON.stringify(dist("sandbox/index.js"))});
      const { schedulers } = await import(${JSON.stringify(dist("schedule/index.js"))});
      const { stores } = await import(${JSON.stringify(dist("store/registry.js"))});
      const { suites, taskFamilies } = await import(${JSON.stringify(dist("tasks/registry.js"))});
      const { trainers } = await import(${JSON.stringify(dist("trainer/index.js"))});
      const sizes = [engines, harnesses, sandboxBackends, schedulers, stores, suites, taskFamilies, trainers].map((r) => r.values().length);
      let error = null;
      try { getHarness("chat-agent"); } catch (e) { error = { code: e.code, message: e.message }; }
      console.log(JSON.stringify({ sizes, error }));
    `);
    expect(r.code, r.stderr).toBe(0);
    expect(r.out).toEqual({
      sizes: [0, 0, 0, 0, 0, 0, 0, 0],
      error: { code: "unknown_harness", message: expect.stringContaining('unknown harness "chat-agent" (no harness is registered: call registerBuiltins()') as unknown },
    });
  });

  it("a process that imports only the builtins module and the rollout runner runs a rollout end to end", async () => {
    // Before registries were explicit, this failed with "unknown harness": only importing src/harness/index.ts (done by
    // the orchestrator and the CLI's rollout job, not by the runner) registered the harnesses.
    const r = await node(`
      const { registerBuiltins } = await import(${JSON.stringify(dist("builtins.js"))});
      const { RolloutStack } = await import(${JSON.stringify(dist("rollout/stack.js"))});
      const { runRollouts } = await import(${JSON.stringify(dist("rollout/runner.js"))});
      const { loadSuite } = await import(${JSON.stringify(dist("tasks/registry.js"))});
      registerBuiltins();
      registerBuiltins();
      const stack = await RolloutStack.open({ engine: "oracle", store: "memory", sandbox: "bwrap", sandboxPool: 2 });
      try {
        const tasks = (await loadSuite("arith:test?n=2&seed=3")).tasks;
        const results = await runRollouts(stack, { tasks, harnesses: ["chat-agent"], samples: 1, idPrefix: "explicit" }, { concurrency: 2 });
        console.log(JSON.stringify(results.map((x) => ({ status: x.status, score: x.score, calls: x.calls, error: x.error }))));
      } finally {
        await stack.close();
      }
    `);
    expect(r.code, r.stderr).toBe(0);
    const results = r.out as { status: string; score: number; calls: number }[];
    expect(results).toHaveLength(2);
    for (const x of results) expect(x).toMatchObject({ status: "ok", score: 1 });
    expect(results.every((x) => x.calls > 0)).toBe(true);
  }, 120_000);
});
