import { describe, expect, it } from "vitest";
import { ANSWER_FILE } from "../../src/tasks/family.js";
import { loadSuite } from "../../src/tasks/registry.js";
import type { OracleStep, Task } from "../../src/tasks/task.js";
import { attempt, mapPool, oracleSteps } from "./helpers.js";

/** Every test here runs the real workspace programs and verifier processes in temp folders. */

const CONCURRENCY = 4;

function answer(content: string): OracleStep {
  return { kind: "write", path: ANSWER_FILE, content };
}

/** The oracle's steps with its final answer replaced. */
function withAnswer(task: Task, content: string): OracleStep[] {
  return [...oracleSteps(task).filter((s) => !(s.kind === "write" && s.path === ANSWER_FILE)), answer(content)];
}

describe("gold solutions score 1", () => {
  it.each([["arith"], ["files"], ["lookup"]])("%s: the oracle's steps, run for real, reach score 1 on train and test", async (family) => {
    const tasks = [...(await loadSuite(`${family}:train?n=12&seed=5`)).tasks, ...(await loadSuite(`${family}:test?n=12&seed=5`)).tasks];
    const results = await mapPool(tasks, CONCURRENCY, (t) => attempt(t, oracleSteps(t)));
    results.forEach((r, i) => {
      const failed = r.steps.filter((s) => !s.ok);
      expect(failed, `${tasks[i]!.id}: ${JSON.stringify(failed)}`).toEqual([]);
      expect(r.result, tasks[i]!.id).toMatchObject({ score: 1 });
      expect(r.result.error).toBeUndefined();
    });
  }, 180_000); // 24 tasks' programs and verifiers: 7-8 s quiet, past 60 s at a load average of ~25 on 2 cores
});

describe("wrong answers fail", () => {
  it("arith: off-by-one and wrapped answers score 0; surrounding whitespace is tolerated", async () => {
    const [t] = (await loadSuite("arith:test?n=1&seed=21")).tasks;
    const gold = t!.metadata.answer!;
    expect((await attempt(t!, withAnswer(t!, String(BigInt(gold) + 1n)))).result.score).toBe(0);
    expect((await attempt(t!, withAnswer(t!, `The answer is ${gold}`))).result.score).toBe(0);
    expect((await attempt(t!, withAnswer(t!, `  ${gold}\n\n`))).result.score).toBe(1);
  });

  it("lookup: the bridge entity scores 0, extra words lower F1 below 1", async () => {
    const tasks = (await loadSuite("lookup:test?n=10&seed=22")).tasks;
    for (const t of tasks.slice(0, 3)) {
      const chain = t.metadata["chain"] as string[];
      expect((await attempt(t, withAnswer(t, chain[1]!))).result.score).toBe(0);
      const padded = (await attempt(t, withAnswer(t, `${t.metadata.answer} city`))).result;
      expect(padded.score).toBeCloseTo(2 / 3, 6);
      expect(padded.subscores["exact"]).toBe(0);
    }
  });

  it("files: half-done or overdone operations score below 1, and destroying other files scores 0", async () => {
    const tasks = (await loadSuite("files:train?n=60&seed=23")).tasks;
    const byOp = (op: string): Task => tasks.find((t) => t.metadata["operation"] === op)!;
    const rename = byOp("rename");
    const renameCmd = oracleSteps(rename)[0]!;
    expect(renameCmd.kind).toBe("run");
    const copied = (await attempt(rename, [{ kind: "run", command: (renameCmd as { command: string }).command.replace(/^mv /, "cp ") }])).result;
    expect(copied.score).toBe(0.5);
    expect(Object.values(copied.subscores).sort()).toEqual([0, 1, 1]);

    const del = byOp("delete");
    const wiped = (await attempt(del, [{ kind: "run", command: "rm -rf ./*" }])).result;
    expect(wiped.score).toBe(0);
    expect(wiped.subscores["kept"]).toBe(0);

    const append = byOp("append");
    const twice = [...oracleSteps(append), ...oracleSteps(append)];
    expect((await attempt(append, twice)).result.score).toBe(0);

    const create = byOp("create");
    const step = oracleSteps(create)[0]!;
    if (step.kind !== "write") throw new Error("create's oracle writes the file");
    expect((await attempt(create, [{ ...step, content: `${step.content}extra line\n` }])).result.score).toBe(0);
  });
});

describe("token F1 (lookup verifier) on hand-computed cases", () => {
  async function f1Of(task: Task, gold: string, pred: string | null): Promise<number> {
    const expectedJson = JSON.parse(task.verifier.files["expected.json"] as string) as Record<string, unknown>;
    const custom: Task = { ...task, verifier: { ...task.verifier, files: { ...task.verifier.files, "expected.json": JSON.stringify({ ...expectedJson, answer: gold }) } } };
    return (await attempt(custom, pred === null ? [] : [answer(pred)])).result.score;
  }

  it.each([
    ["Port Velmar City", "Port Velmar City.", 1],
    ["Port Velmar City", "Velmar", 0.5], // P = 1, R = 1/3
    ["Port Velmar City", "the port of velmar", 2 / 3], // tokens port, of, velmar: P = 2/3, R = 2/3
    ["Port Velmar City", "city city", 0.4], // one match (counts clip): P = 1/2, R = 1/3
    ["Port Velmar City", "An elsewhere", 0],
    ["Port Velmar City", "", 0],
    ["Velmar", "VELMAR!", 1],
  ])("gold %j, answer %j → F1 %d", async (gold, pred, f1) => {
    const [t] = (await loadSuite("lookup:train?n=1")).tasks;
    expect(await f1Of(t!, gold, pred)).toBeCloseTo(f1, 6);
  });

  it("a missing answer file scores 0 and says so", async () => {
    const [t] = (await loadSuite("lookup:train?n=1")).tasks;
    const r = await attempt(t!, []);
    expect(r.result.score).toBe(0);
    expect(r.result.error).toMatch(/answer\.txt/);
  });
});

describe("process signals", () => {
  it("lookup: search_hits lists every search in order, 1 where it returned a gold-path fact", async () => {
    const [t] = (await loadSuite("lookup:train?n=1&seed=31")).tasks;
    const gold = t!.metadata.answer!;
    const offPath = (t!.metadata.entities ?? []).filter((e) => !(t!.metadata["chain"] as string[]).includes(e));
    const steps: OracleStep[] = [
      { kind: "run", command: './search "qqq zzz"', expect: "No matching facts." },
      ...oracleSteps(t!).slice(0, 1),
      { kind: "run", command: `./search "${offPath[0]} ${offPath[1]} ${offPath[2]}"` },
      ...oracleSteps(t!).slice(1),
    ];
    const r = await attempt(t!, steps);
    expect(r.steps.every((s) => s.ok)).toBe(true);
    const hits = r.result.subscores["search_hits"] as number[];
    const hops = (t!.metadata["chain"] as string[]).length - 1;
    expect(hits.length).toBe(hops + 2);
    expect(hits[0]).toBe(0);
    expect(hits[1]).toBe(1);
    expect(hits.slice(3)).toEqual(Array.from({ length: hops - 1 }, () => 1));
    expect(r.result.subscores["path_coverage"]).toBe(1);
    expect(r.result.score).toBe(1);
    expect(gold).toBe(t!.metadata.oracle!.answer);
  });

  it("lookup: an answer found without searching scores by F1 but reports zero path coverage", async () => {
    const [t] = (await loadSuite("lookup:train?n=1&seed=32")).tasks;
    const r = await attempt(t!, [answer(t!.metadata.answer!)]);
    expect(r.result).toEqual({ score: 1, subscores: { f1: 1, exact: 1, search_hits: [], path_coverage: 0 } });
  });

  it("arith: calc_calls lists every ./calc call in order, 1 where it returned the gold value", async () => {
    const [t] = (await loadSuite("arith:train?n=1&seed=33")).tasks;
    const r = await attempt(t!, [{ kind: "run", command: './calc "1 + 1"', expect: "2" }, ...oracleSteps(t!)]);
    expect(r.result.subscores).toEqual({ exact: 1, calc_used: 1, calc_calls: [0, 1] });
    const noTool = await attempt(t!, [answer(t!.metadata.answer!)]);
    expect(noTool.result.subscores).toEqual({ exact: 1, calc_used: 0, calc_calls: [] });
  });
});
