import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSuiteDir } from "../../src/tasks/load.js";
import { verifyLocally } from "../../src/tasks/local-run.js";
import { seedWorkspace } from "../../src/tasks/materialize.js";
import type { Task } from "../../src/tasks/task.js";
import type { VerifierResult } from "../../src/tasks/verifier-result.js";
import { SOLUTIONS, VARIANTS, type Variant } from "./clawgym-solutions.js";

/**
 * The example ClawGym-Bench tasks (examples/clawgym) graded by their own reward.sh + check.py through the adapter,
 * as local processes: full, partial and wrong solutions get the hand-computed scores, and the wrong ones, which also
 * plant a fake grader and a usercustomize.py, cannot forge the reward. (Through real harness CLIs in sandboxes:
 * test/harness/clawgym-real.test.ts.)
 */

const EXAMPLES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "examples", "clawgym");

let tmp: string;
let tasks: Task[];
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "hrl-clawgym-ex-"));
  tasks = await loadSuiteDir(EXAMPLES);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Seeds a workspace, runs the solution with `sh -c` and its own HOME (the forge writes a user site-packages there), grades. */
async function grade(task: Task, variant: Variant | "nothing"): Promise<VerifierResult> {
  const ws = join(tmp, `${task.id}-${variant}`, "ws");
  const home = join(tmp, `${task.id}-${variant}`, "home");
  await mkdir(home, { recursive: true });
  await seedWorkspace(task, ws);
  if (variant !== "nothing") {
    const r = spawnSync("sh", ["-c", SOLUTIONS[task.id]![variant].command], { cwd: ws, env: { ...process.env, HOME: home }, encoding: "utf8", timeout: 30_000 });
    expect(r.status, r.stderr).toBe(0);
  }
  // The grader runs with the agent's HOME, as in a sandbox (where the forge's usercustomize.py would be seen), and a
  // TMPDIR of its own, which must be empty again afterwards (the adapter's clean HOME and TMPDIR are removed).
  const scratch = join(tmp, `${task.id}-${variant}`, "tmp");
  await mkdir(scratch, { recursive: true });
  const saved = { HOME: process.env.HOME, TMPDIR: process.env.TMPDIR };
  process.env.HOME = home;
  process.env.TMPDIR = scratch;
  try {
    const { process: proc, ...result } = await verifyLocally(task, ws);
    expect(proc.code, proc.stderr).toBe(0);
    expect(await readdir(scratch)).toEqual([]);
    return result;
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe("example ClawGym-Bench tasks graded by their own reward.sh", () => {
  it("loads the three examples from their folders", () => {
    expect(tasks.map((t) => t.id)).toEqual(["cg-config-fix", "cg-csv-revenue", "cg-log-summary"]);
    for (const t of tasks) {
      expect(t.prompt).not.toContain("/root/.openclaw");
      expect(t.prompt).toContain("/workspace/");
    }
  });

  for (const id of Object.keys(SOLUTIONS)) {
    for (const variant of VARIANTS) {
      it(`${id}: the ${variant} solution scores ${SOLUTIONS[id]![variant].score} with the grader's sub-scores`, { timeout: 60_000 }, async () => {
        const task = tasks.find((t) => t.id === id)!;
        const want = SOLUTIONS[id]![variant];
        expect(await grade(task, variant)).toEqual({ score: want.score, subscores: want.subscores });
      });
    }
    it(`${id}: doing nothing scores 0`, { timeout: 60_000 }, async () => {
      const result = await grade(tasks.find((t) => t.id === id)!, "nothing");
      expect(result.score).toBe(0);
    });
  }

  it("control: the planted files do forge a score of 1 when the grader runs with the agent's HOME and reward/ left in place", { timeout: 60_000 }, async () => {
    // What the adapter guards against, shown without it: the agent's usercustomize.py prints 1 last.
    const task = tasks.find((t) => t.id === "cg-log-summary")!;
    const ws = join(tmp, "control", "ws");
    const home = join(tmp, "control", "home");
    await mkdir(home, { recursive: true });
    await seedWorkspace(task, ws);
    const env = { ...process.env, HOME: home };
    expect(spawnSync("sh", ["-c", SOLUTIONS[task.id]!.wrong.command], { cwd: ws, env, timeout: 30_000 }).status).toBe(0);
    const naive = spawnSync("python3", ["-c", "import sys; print(0)"], { cwd: ws, env, encoding: "utf8", timeout: 30_000 });
    expect(naive.stdout.trim().split("\n").pop()).toBe("1");
  });
});
