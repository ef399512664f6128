import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import { noiseTask } from "../train/noise-tasks.js";
import { REPO_ROOT } from "../setup/cli.js";

/** Pids of live processes whose environment carries `marker` (the CLI's children inherit it: the torch worker). */
function processesWithMarker(marker: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readFileSync(`/proc/${e}/environ`, "latin1").includes(marker)) out.push(Number(e));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe("SIGTERM stops `harnessrl train` and everything it started within seconds", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-sigterm-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("mid-run (worker, engine and sandboxes up), SIGTERM ends the CLI, the torch worker and every sandbox", async () => {
    const suite = join(root, "suite");
    await writeNativeSuite([0, 1, 2, 3].map((i) => noiseTask(i, "train")), join(suite, "train"));
    const config = join(root, "run.yaml");
    writeFileSync(
      config,
      stringify({
        name: "sigterm",
        seed: 1,
        model: { preset: "tiny-1m", seed: 3 },
        engine: { kind: "llamacpp", threads: 1, sequences: 4 },
        sampling: { temperature: 1, max_tokens: 16 },
        rollout: { sandbox: "bwrap", concurrency: 2, max_turns: 1, timeout_s: 60, memory_mb: 1024 },
        harnesses: ["chat-agent"],
        tasks: { train: `dir:${join(suite, "train")}` },
        algorithm: { lr: 0.01 },
        budget: { steps: 200, tasks_per_step: 2, samples: 2 },
      }),
    );
    const sandboxRoot = join(root, "sandboxes");
    const marker = `HRL_SIGTERM_TEST=${process.pid}-${Date.now()}`;
    const [key, value] = marker.split("=") as [string, string];
    const child = spawn(process.execPath, ["dist/cli/main.js", "train", "--config", config, "--run-dir", join(root, "run")], {
      cwd: REPO_ROOT,
      env: { ...process.env, HARNESSRL_SANDBOX_ROOT: sandboxRoot, [key]: value },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.once("close", (code) => resolve({ code, at: Date.now() })));
    try {
      // Wait (bounded) until RL runs: the worker is up and a rollout's sandbox exists (pool sandboxes are labelled "warm").
      const deadline = Date.now() + 240_000;
      const rolloutSandbox = (): boolean =>
        existsSync(sandboxRoot) &&
        readdirSync(sandboxRoot).some((d) => {
          try {
            return readFileSync(join(sandboxRoot, d, "state.json"), "utf8").includes('"rollout"');
          } catch {
            return false;
          }
        });
      while (Date.now() < deadline && !(rolloutSandbox() && processesWithMarker(marker).length >= 2) && child.exitCode === null) await sleep(100);
      expect(child.exitCode, stderr).toBeNull();
      expect(rolloutSandbox(), stderr).toBe(true);
      const sent = Date.now();
      child.kill("SIGTERM");
      const end = await Promise.race([exited, sleep(10_000).then(() => null)]);
      expect(end, "train still running 10 s after SIGTERM").not.toBeNull();
      expect(end!.code).toBe(143);
      expect(end!.at - sent).toBeLessThan(5_000);
      // Nothing it started lives on: no process with its environment (the torch worker), no sandbox left.
      await sleep(500);
      expect(processesWithMarker(marker)).toEqual([]);
      expect(existsSync(sandboxRoot) ? readdirSync(sandboxRoot) : []).toEqual([]);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
      for (const pid of processesWithMarker(marker)) process.kill(pid, "SIGKILL");
    }
  }, 400_000);
});
