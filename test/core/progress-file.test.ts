import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { PROGRESS_HEARTBEAT_MS, ProgressFile, readProgressFile } from "../../src/core/progress-file.js";
import { Progress } from "../../src/core/progress.js";
import { quietTerminal as quiet } from "./quiet-terminal.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
afterEach(() => {
  vi.useRealTimers();
});
const fileIn = (): string => {
  const d = mkdtempSync(join(tmpdir(), "hrl-progress-"));
  dirs.push(d);
  return join(d, "progress.json");
};
const tasks = (path: string): string[] => (readProgressFile(path)?.tasks ?? []).map((t) => `${t.label} ${t.done}/${t.total}${t.detail ? ` ${t.detail}` : ""}`);

describe("progress.json: the long work a run is in the middle of", () => {
  it("an RL run: the run's step count stays while a step's rollouts come and go; finished work leaves the file", () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const path = fileIn();
    const sink = new ProgressFile(path);
    // Work shows from its start (0 done), written at once.
    const train = new Progress("train", 10, { sink, out: quiet });
    expect(tasks(path)).toEqual(["train 0/10"]);
    vi.advanceTimersByTime(1_000);
    train.update(3, "resumed at step 3");
    expect(tasks(path)).toEqual(["train 3/10 resumed at step 3"]);
    const rollouts = new Progress("step 4 rollouts", 24, { sink, out: quiet });
    // A new piece of work is written at once, next to the one still going.
    expect(tasks(path)).toEqual(["train 3/10 resumed at step 3", "step 4 rollouts 0/24"]);
    vi.advanceTimersByTime(1_000);
    rollouts.update(1, "reward so far 0.000");
    expect(tasks(path)).toEqual(["train 3/10 resumed at step 3", "step 4 rollouts 1/24 reward so far 0.000"]);
    // Counts inside the same second wait for its end, then the latest is written.
    rollouts.update(2, "reward so far 0.500");
    rollouts.update(3, "reward so far 0.500");
    expect(tasks(path)).toContain("step 4 rollouts 1/24 reward so far 0.000");
    vi.advanceTimersByTime(1_000);
    expect(tasks(path)).toContain("step 4 rollouts 3/24 reward so far 0.500");
    // Done: gone at once.
    rollouts.update(24, "reward so far 0.375");
    expect(tasks(path)).toEqual(["train 3/10 resumed at step 3"]);
    // SFT stopped by its NLL target short of its planned steps: closed, so it is not shown for the rest of the run.
    const sft = new Progress("sft", 360, { sink, out: quiet });
    sft.update(127, "nll 0.098");
    sft.close();
    expect(tasks(path)).toEqual(["train 3/10 resumed at step 3"]);
    train.update(10);
    expect(readProgressFile(path)).toMatchObject({ version: 1, pid: process.pid, tasks: [] });
  });

  it("rewrites the file every heartbeat while work is in progress, so a long trainer step still reads as alive; not once nothing is", () => {
    vi.useFakeTimers({ now: 5_000_000 });
    const path = fileIn();
    const sink = new ProgressFile(path);
    const sft = new Progress("sft", 100, { sink, out: quiet });
    sft.update(1, "nll 3.2");
    const first = readProgressFile(path)?.updatedAt ?? 0;
    vi.advanceTimersByTime(PROGRESS_HEARTBEAT_MS);
    expect(readProgressFile(path)?.updatedAt).toBe(first + PROGRESS_HEARTBEAT_MS);
    expect(tasks(path)).toEqual(["sft 1/100 nll 3.2"]);
    sft.update(100);
    const last = readProgressFile(path)?.updatedAt;
    vi.advanceTimersByTime(5 * PROGRESS_HEARTBEAT_MS);
    expect(readProgressFile(path)?.updatedAt).toBe(last);
  });

  it("work whose units all finish in the same moment still shows while it runs (from its start)", () => {
    const path = fileIn();
    const sink = new ProgressFile(path);
    const demos = new Progress("demos", 2, { sink, out: quiet });
    expect(tasks(path)).toEqual(["demos 0/2"]);
    demos.update(1);
    demos.update(2);
    expect(tasks(path)).toEqual([]);
  });

  it("a directory that went away does not fail the work that reports to it", () => {
    const path = join(fileIn(), "..", "gone", "progress.json");
    const sink = new ProgressFile(path);
    expect(() => new Progress("demos", 4, { sink, out: quiet }).update(1)).not.toThrow();
  });

  it("reads anything that is not a progress file as none: another JSON, a torn write, oversized fields", () => {
    const path = fileIn();
    for (const text of ["", "{", "[]", JSON.stringify({ version: 2, pid: 1, updatedAt: 1, tasks: [] }), JSON.stringify({ version: 1, pid: 1, updatedAt: 1, tasks: [{ label: "x".repeat(201), done: 1, total: 2, detail: "", startedAt: 0, updatedAt: 0 }] }), JSON.stringify({ version: 1, pid: 1, updatedAt: 1, tasks: [{ label: "x", done: -1, total: 2, detail: "", startedAt: 0, updatedAt: 0 }] })]) {
      writeFileSync(path, text);
      expect(readProgressFile(path), text.slice(0, 40)).toBeNull();
    }
    expect(readProgressFile(join(path, "..", "missing.json"))).toBeNull();
    writeFileSync(path, JSON.stringify({ version: 1, pid: 1, updatedAt: 1, tasks: [{ label: "eval-before", done: 91, total: 160, detail: "", startedAt: 0, updatedAt: 1 }] }));
    expect(tasks(path)).toEqual(["eval-before 91/160"]);
    expect(readFileSync(path, "utf8")).toContain("eval-before");
  });
});
