import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { applyStepsLocally, parseVerifierOutput, runProcess, seedWorkspace, verifierFilesOf, workspaceSeedOf } from "../../src/tasks/index.js";
import { loadSuite } from "../../src/tasks/registry.js";
import { stepAsShellCommand } from "../../src/tasks/shell.js";
import { TOOL_LOG_DIR } from "../../src/tasks/task.js";

let ws: string;
beforeEach(async () => {
  ws = await mkdtemp(join(tmpdir(), "hrl-prog-"));
});
afterEach(async () => {
  await rm(ws, { recursive: true, force: true });
});

async function logLines(name: string): Promise<unknown[]> {
  const text = await readFile(join(ws, TOOL_LOG_DIR, name), "utf8");
  return text.trim().split("\n").map((l) => JSON.parse(l) as unknown);
}

describe("./calc", () => {
  it("evaluates with precedence, parentheses, unicode operators and exact big integers, and logs every call", async () => {
    const [t] = (await loadSuite("arith:train?n=1")).tasks;
    await seedWorkspace(t!, ws);
    const cases: [string, string][] = [
      ["2 + 3 * 4", "14"],
      ["(2 + 3) * 4", "20"],
      ["7 × 6", "42"],
      ["4,817 x 29", "139693"],
      ["10 / 4", "2.5"],
      ["-3 - -5", "2"],
      ["123456789 * 987654321", "121932631112635269"],
    ];
    for (const [expr, want] of cases) {
      const r = await runProcess(["./calc", expr], ws);
      expect(r, expr).toMatchObject({ code: 0, stdout: `${want}\n` });
    }
    const bad = await runProcess(["./calc", "2 +"], ws);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/error: unexpected end/);
    expect((await runProcess(["./calc", "1/0"], ws)).stderr).toMatch(/division by zero/);
    expect((await runProcess(["./calc"], ws)).code).toBe(2);
    const log = await logLines("calc.jsonl");
    expect(log).toHaveLength(cases.length + 2);
    expect(log[0]).toEqual({ expr: "2 + 3 * 4", result: "14" });
    expect(log[cases.length]).toEqual({ expr: "2 +", error: "unexpected end of expression" });
  });
});

describe("./search", () => {
  it("is deterministic, ranks the fact matching entity and relation first, returns at most 3, and logs query + results", async () => {
    const [t] = (await loadSuite("lookup:test?n=1&seed=9")).tasks;
    await seedWorkspace(t!, ws);
    const first = oracleFirstStep(t!.metadata.oracle!.steps[0]);
    const a = await runProcess(["sh", "-c", first.command], ws);
    const b = await runProcess(["sh", "-c", first.command], ws);
    expect(a.stdout).toBe(b.stdout);
    const lines = a.stdout.trim().split("\n");
    expect(lines[0]).toBe(first.expect);
    expect(lines.length).toBeLessThanOrEqual(3);
    const none = await runProcess(["./search", "xyzzy"], ws);
    expect(none.stdout).toBe("No matching facts.\n");
    const log = await logLines("search.jsonl");
    expect(log[0]).toMatchObject({ results: lines });
    expect(log[2]).toEqual({ query: "xyzzy", results: [] });
  });
});

describe("./search --chain (the lookuprun rung)", () => {
  it("walks every hop of question.txt, logs one search per hop, prints the final answer; a bad file exits 2", async () => {
    for (const t of (await loadSuite("lookuprun:test?n=6&seed=4")).tasks) {
      await rm(ws, { recursive: true, force: true });
      await mkdir(ws, { recursive: true });
      await seedWorkspace(t, ws);
      const r = await runProcess(["./search", "--chain", "question.txt"], ws);
      expect(r, t.id).toMatchObject({ code: 0, stdout: `${t.metadata.answer}\n` });
      const log = (await logLines("search.jsonl")) as { query: string; results: string[] }[];
      const gold = t.metadata.goldPath as string[];
      expect(log).toHaveLength(gold.length);
      // Each hop's top result is the gold fact of that hop.
      log.forEach((entry, k) => expect(entry.results[0]).toBe(gold[k]));
    }
    const missing = await runProcess(["./search", "--chain", "nope.txt"], ws);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("cannot read nope.txt");
  });
});

function oracleFirstStep(step: unknown): { command: string; expect: string } {
  const s = step as { kind: string; command: string; expect: string };
  expect(s.kind).toBe("run");
  return s;
}

describe("stepAsShellCommand", () => {
  it("turns a write step into a shell command that writes the exact content, quotes included", async () => {
    const content = "it's a \"test\" $HOME `x`\nline 2\n";
    const cmd = stepAsShellCommand({ kind: "write", path: "sub dir/a.txt", content });
    const r = await runProcess(["sh", "-c", cmd], ws);
    expect(r.code).toBe(0);
    expect(await readFile(join(ws, "sub dir/a.txt"), "utf8")).toBe(content);
  });
});

describe("sandbox seed helpers", () => {
  it("a workspace seeded from plain bytes plus chmod of the listed executables solves and verifies like seedWorkspace", async () => {
    const [t] = (await loadSuite("lookup:train?n=1&seed=6")).tasks;
    const { files, executables } = workspaceSeedOf(t!);
    expect(executables).toEqual(["search"]);
    for (const [rel, data] of Object.entries(files)) await writeFile(join(ws, rel), data, { mode: 0o644 });
    for (const rel of executables) await chmod(join(ws, rel), 0o755);
    const steps = await applyStepsLocally(t!.metadata.oracle!.steps, ws);
    expect(steps.every((s) => s.ok)).toBe(true);
    const verifier = verifierFilesOf(t!);
    expect(Object.keys(verifier).sort()).toEqual([".harnessrl/verifier/expected.json", ".harnessrl/verifier/verify.cjs"]);
    for (const [rel, data] of Object.entries(verifier)) {
      await mkdir(dirname(join(ws, rel)), { recursive: true });
      await writeFile(join(ws, rel), data);
    }
    const r = await runProcess(t!.verifier.command, ws);
    expect(parseVerifierOutput(r.stdout)).toMatchObject({ score: 1 });
  });
});
