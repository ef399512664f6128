import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { loadSuite } from "../../src/tasks/registry.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import { noiseTask } from "../train/noise-tasks.js";
import { REPO_ROOT } from "../setup/cli.js";
import { killChild } from "../../src/core/kill-child.js";

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

/** Pids of live processes of the given sandboxes: launch chains naming their directories, commands carrying their id. */
function sandboxProcesses(dirs: Set<string>, ids: Set<string>): number[] {
  const out: number[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmdline = readFileSync(`/proc/${e}/cmdline`, "latin1");
      const environ = readFileSync(`/proc/${e}/environ`, "latin1");
      if ([...dirs].some((d) => cmdline.includes(d)) || [...ids].some((id) => environ.includes(`HARNESSRL_SANDBOX_ID=${id}`))) out.push(Number(e));
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
      killChild(child, "SIGTERM");
      const end = await Promise.race([exited, sleep(10_000).then(() => null)]);
      expect(end, "train still running 10 s after SIGTERM").not.toBeNull();
      expect(end!.code).toBe(143);
      expect(end!.at - sent).toBeLessThan(5_000);
      // Nothing it started lives on: no process with its environment (the torch worker), no sandbox left.
      await sleep(500);
      expect(processesWithMarker(marker)).toEqual([]);
      expect(existsSync(sandboxRoot) ? readdirSync(sandboxRoot) : []).toEqual([]);
    } finally {
      killChild(child, "SIGKILL");
      for (const pid of processesWithMarker(marker)) process.kill(pid, "SIGKILL");
    }
  }, 400_000);

  it("mid-rollout, after a policy planted FIFOs where the host writes its verifier, SIGTERM ends `rollout`, every sandbox and harness process", async () => {
    // Two rollouts at once: one plants FIFOs on the verifier's files and exits (the host then installs the verifier
    // there: a blocking open would hang it, and a thread stuck in open() also hangs process.exit), the other sleeps so
    // the run is mid-rollout when SIGTERM comes.
    const suiteSpec = "arith:test?n=2&seed=3";
    const [first, second] = (await loadSuite(suiteSpec)).tasks;
    if (!first || !second) throw new Error("suite too small");
    const md5 = (t: string): string => createHash("md5").update(t).digest("hex");
    expect(md5(first.prompt)).not.toBe(md5(second.prompt));
    // The first task's rollout plants, the second's sleeps (told apart by the prompt's hash).
    const policy = [
      `if [ "$(printf %s "$HARNESSRL_PROMPT" | md5sum | cut -c1-32)" = ${md5(first.prompt)} ]; then`,
      "  mkdir -p .harnessrl/verifier && mkfifo .harnessrl/verifier/verify.cjs .harnessrl/verifier/expected.json && touch planted",
      "else touch sleeping; sleep 300; fi",
    ].join("\n");
    const out = join(root, "rollout-run");
    const sandboxRoot = join(root, "rollout-sandboxes");
    chmodSync(root, 0o711); // sandboxes run as nobody (the CLI runs as root in CI): it must reach their directories
    const marker = `HRL_SIGTERM_TEST=${process.pid}-${Date.now()}-rollout`;
    const [key, value] = marker.split("=") as [string, string];
    const args = ["dist/cli/main.js", "rollout", "--engine", "oracle", "--tasks", suiteSpec, "--harness", "command", "--concurrency", "2", "--timeout-s", "300", "--out", out];
    const env = { ...process.env, HARNESSRL_SANDBOX_ROOT: sandboxRoot, HARNESSRL_HARNESS_COMMAND: policy, [key]: value };
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.once("close", (code) => resolve({ code, at: Date.now() })));
    const ids = new Set<string>();
    const dirs = new Set<string>([sandboxRoot]);
    const workspaces = (file: string): boolean =>
      existsSync(sandboxRoot) &&
      readdirSync(sandboxRoot).some((d) => {
        if (d.startsWith("sbx_")) ids.add(d);
        try {
          // The workspace lives in the sandbox's neutral mount directory, named in its state.json.
          const mountDir = (JSON.parse(readFileSync(join(sandboxRoot, d, "state.json"), "utf8")) as { mountDir?: string }).mountDir;
          if (mountDir !== undefined) dirs.add(mountDir);
          return mountDir !== undefined && existsSync(join(mountDir, "workspace", file));
        } catch {
          return false;
        }
      });
    const planterDone = (): boolean => existsSync(join(out, "rollouts.jsonl")) && readFileSync(join(out, "rollouts.jsonl"), "utf8").includes(`"${first.id}"`);
    try {
      let planted = false;
      const deadline = Date.now() + 120_000;
      while (Date.now() < deadline && child.exitCode === null && !(workspaces("sleeping") && (planted ||= workspaces("planted") || planterDone()))) await sleep(50);
      expect(child.exitCode, stderr).toBeNull();
      expect(planted, stderr).toBe(true);
      // The host reaches the planted FIFOs right after the planter's harness exits; give it time to finish the rollout.
      const settle = Date.now() + 10_000;
      while (Date.now() < settle && !planterDone()) await sleep(100);
      const planterFinished = planterDone();
      workspaces("");
      const sent = Date.now();
      killChild(child, "SIGTERM");
      const end = await Promise.race([exited, sleep(10_000).then(() => null)]);
      expect(end, `rollout still running 10 s after SIGTERM (planter finished: ${planterFinished})`).not.toBeNull();
      expect(end!.code).toBe(143);
      expect(end!.at - sent).toBeLessThan(5_000);
      await sleep(500);
      expect(processesWithMarker(marker)).toEqual([]);
      expect(sandboxProcesses(dirs, ids)).toEqual([]);
      expect(existsSync(sandboxRoot) ? readdirSync(sandboxRoot) : []).toEqual([]);
      expect([...dirs].filter((d) => d !== sandboxRoot && existsSync(d))).toEqual([]);
      // And the planted FIFOs never held the host: the planter's rollout had ended, scored by its verifier.
      expect(planterFinished).toBe(true);
    } finally {
      killChild(child, "SIGKILL");
      for (const pid of [...processesWithMarker(marker), ...sandboxProcesses(dirs, ids)]) process.kill(pid, "SIGKILL");
    }
  }, 300_000);
});
