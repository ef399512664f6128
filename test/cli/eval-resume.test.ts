import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { EvalSummary } from "../../src/eval/metrics.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { REPO_ROOT } from "../setup/cli.js";

const root = mkdtempSync(join(tmpdir(), "hrl-evalcli-"));
const out = join(root, "eval");

/** `harnessrl eval` with the oracle over 3 calcrun tasks × 2 samples, one rollout at a time. */
function evalCli(extra: string[], env: Record<string, string> = {}): { status: number | null; signal: NodeJS.Signals | null; stderr: string } {
  const args = ["dist/cli/main.js", "eval", "--engine", "oracle", "--tasks", "calcrun:test?n=3&seed=5", "--harness", "chat-agent", "--samples", "2", "--concurrency", "1", "--out", out, ...extra];
  const childEnv = { ...process.env, ...env };
  if (!env.HARNESSRL_FAULT) delete childEnv.HARNESSRL_FAULT;
  const r = spawnSync(process.execPath, args, { cwd: REPO_ROOT, env: childEnv, encoding: "utf8", timeout: 300_000 });
  return { status: r.status, signal: r.signal, stderr: r.stderr };
}
const jsonl = (name: string): RolloutResult[] => readFileSync(join(out, name), "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as RolloutResult);

describe("harnessrl eval stopped mid-way and run again with the same --out continues (oracle, calcrun, CLI)", () => {
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("keeps the 2 finished rollouts, runs the other 4, and starts afresh when the settings change", () => {
    const killed = evalCli([], { HARNESSRL_FAULT: "during-eval@2" });
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    const first = jsonl("rollouts.jsonl");
    // One at a time in the plan's order: the first task's two samples.
    expect(first.map((r) => r.sample)).toEqual([0, 1]);
    expect(first[1]?.taskId).toBe(first[0]?.taskId);
    expect(first.every((r) => /^eval-calcrun-test-s5-\d+-chat-agent-[01]$/.test(r.rolloutId)), first.map((r) => r.rolloutId).join(" ")).toBe(true);

    const resumed = evalCli([]);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain("eval: resuming with 2 of 6 rollouts done");
    const all = jsonl("rollouts.jsonl");
    expect(all).toHaveLength(6);
    expect(all.slice(0, 2)).toEqual(first);
    expect(all.slice(2).every((r) => /^eval-r[0-9a-z]+-/.test(r.rolloutId))).toBe(true);
    expect(new Set(all.map((r) => `${r.taskId}/${r.sample}`)).size).toBe(6);
    const summary = JSON.parse(readFileSync(join(out, "eval.json"), "utf8")) as EvalSummary;
    expect(summary.overall.rollouts).toBe(6);
    // The oracle solves calcrun: every rollout passed, in both attempts.
    expect(summary.overall.passAt1).toBe(1);
    // rollouts.json is in the plan's order whichever attempt ran a rollout.
    const ordered = JSON.parse(readFileSync(join(out, "rollouts.json"), "utf8")) as RolloutResult[];
    expect(ordered.map((r) => `${r.taskId}/${r.sample}`)).toEqual([...new Set(ordered.map((r) => r.taskId))].flatMap((t) => [`${t}/0`, `${t}/1`]));

    // Another temperature is another evaluation: nothing of the journal is counted.
    const changed = evalCli(["--temperature", "0.5"]);
    expect(changed.status, changed.stderr).toBe(0);
    expect(changed.stderr).toMatch(/not continuing .*eval-journal\.jsonl: it belongs to another evaluation/);
    // Under ids of a new attempt: the earlier evaluation's records in this --out keep theirs.
    expect(jsonl("rollouts.jsonl").every((r) => /^eval-r[0-9a-z]+-calcrun/.test(r.rolloutId))).toBe(true);
    expect(jsonl("rollouts.jsonl")).toHaveLength(6);
  }, 600_000);
});
