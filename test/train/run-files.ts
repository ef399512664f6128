import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { RunState } from "../../src/train/run-dir.js";

/** What the tests of whole training runs read back from a run directory, and how they start `harnessrl train`. */

export const readRunState = (runDir: string): RunState => JSON.parse(readFileSync(join(runDir, "state.json"), "utf8")) as RunState;

export const readMetrics = (runDir: string): Record<string, unknown>[] =>
  readFileSync(join(runDir, "metrics.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** The RL steps' metrics lines. */
export const rlRows = (runDir: string): Record<string, number | string>[] => readMetrics(runDir).filter((r) => r.phase === "rl") as Record<string, number | string>[];

/** The metrics lines as `<phase><step>` (`rl1`, `eval1`, …): what a resumed run must have once each. */
export const metricSteps = (runDir: string): string[] => readMetrics(runDir).map((r) => `${String(r.phase)}${String(r.step)}`);

/**
 * `harnessrl train` from dist/, as a user runs it, with the fault-injection variables set as given (and every other
 * one of them cleared, so the caller's environment cannot inject a fault by accident).
 */
export function trainCli(configPath: string, runDir: string, faults: { HARNESSRL_FAULT?: string; HARNESSRL_RANK_FAULT?: string }, timeoutMs: number): { status: number | null; signal: NodeJS.Signals | null; stderr: string } {
  const env = { ...process.env };
  delete env.HARNESSRL_FAULT;
  delete env.HARNESSRL_RANK_FAULT;
  Object.assign(env, faults);
  const r = spawnSync(process.execPath, ["dist/cli/main.js", "train", "--config", configPath, "--run-dir", runDir], { env, encoding: "utf8", timeout: timeoutMs });
  return { status: r.status, signal: r.signal, stderr: r.stderr };
}
