import { describe, expect, it } from "vitest";
import { arithFamily } from "../../src/tasks/families/arith.js";
import { calcfileFamily, calcrunFamily } from "../../src/tasks/families/calcfile.js";
import { lookuprunFamily } from "../../src/tasks/families/lookuprun.js";
import { filesFamily } from "../../src/tasks/families/files.js";
import { lookupFamily } from "../../src/tasks/families/lookup.js";
import { builtinTaskById, loadSuite } from "../../src/tasks/registry.js";
import { taskSchema, type Task } from "../../src/tasks/task.js";

const FAMILIES = [arithFamily, filesFamily, lookupFamily];

function entitiesOf(tasks: Task[]): Set<string> {
  return new Set(tasks.flatMap((t) => t.metadata.entities ?? []));
}

describe("built-in task generation", () => {
  it.each(FAMILIES.map((f) => [f.name]))("%s: the same spec gives identical suites, a different seed a different one", async (name) => {
    const a = await loadSuite(`${name}:train?n=40&seed=7`);
    const b = await loadSuite(`${name}:train?n=40&seed=7`);
    const c = await loadSuite(`${name}:train?n=40&seed=8`);
    expect(JSON.stringify(a.tasks)).toBe(JSON.stringify(b.tasks));
    expect(c.tasks.map((t) => t.prompt)).not.toEqual(a.tasks.map((t) => t.prompt));
  });

  it("a larger n extends a smaller one (tasks depend only on split, seed and index)", async () => {
    const small = await loadSuite("lookup:test?n=5&seed=3");
    const large = await loadSuite("lookup:test?n=20&seed=3");
    expect(large.tasks.slice(0, 5)).toEqual(small.tasks);
  });

  it.each(FAMILIES.map((f) => [f.name, f]))("%s: train and test share no entity and no template, whatever the seeds", async (name, family) => {
    const train = (await loadSuite(`${name}:train?n=150&seed=1`)).tasks;
    const test = [...(await loadSuite(`${name}:test?n=150&seed=1`)).tasks, ...(await loadSuite(`${name}:test?n=100&seed=99`)).tasks];
    const trainEntities = entitiesOf(train);
    const testEntities = entitiesOf(test);
    expect(trainEntities.size).toBeGreaterThan(20);
    expect(testEntities.size).toBeGreaterThan(10);
    expect([...testEntities].filter((e) => trainEntities.has(e))).toEqual([]);
    // Entities must also never appear in the other split's prompts (e.g. a test name inside a train question).
    const trainPrompts = train.map((t) => t.prompt).join("\n");
    const leaked = [...testEntities].filter((e) => new RegExp(`\\b${e}\\b`).test(trainPrompts));
    expect(leaked).toEqual([]);

    const trainTemplates = new Set(train.map((t) => t.metadata.template));
    const testTemplates = new Set(test.map((t) => t.metadata.template));
    expect([...testTemplates].filter((t) => trainTemplates.has(t))).toEqual([]);
    // Every declared template is used, and the declared sets are disjoint.
    expect([...trainTemplates].sort()).toEqual([...family.templates.train].sort());
    expect([...testTemplates].sort()).toEqual([...family.templates.test].sort());
    expect(family.templates.train.filter((t) => family.templates.test.includes(t))).toEqual([]);
  });

  it.each(FAMILIES.map((f) => [f.name]))("%s: tasks are valid, short, uniquely named and carry oracle steps", async (name) => {
    const tasks = [...(await loadSuite(`${name}:train?n=60`)).tasks, ...(await loadSuite(`${name}:test?n=60`)).tasks];
    expect(new Set(tasks.map((t) => t.id)).size).toBe(tasks.length);
    for (const t of tasks) {
      expect(taskSchema.safeParse(t).success).toBe(true);
      expect(t.prompt.length).toBeLessThanOrEqual(200);
      expect(t.metadata.oracle?.steps.length).toBeGreaterThan(0);
      expect(t.metadata.difficulty).toBeGreaterThanOrEqual(1);
      expect(builtinTaskById(t.id)).toEqual(t);
    }
  });

  it("arith answers are large enough that guessing fails", async () => {
    const tasks = (await loadSuite("arith:test?n=100")).tasks;
    for (const t of tasks) expect(Number(t.metadata.answer)).toBeGreaterThanOrEqual(1000);
    expect(new Set(tasks.map((t) => t.metadata.answer)).size).toBeGreaterThan(95);
  });

  it("lookup questions need two or more hops through a bridge entity distinct from the start and the answer", async () => {
    const tasks = (await loadSuite("lookup:train?n=100")).tasks;
    const hops = new Set<number>();
    for (const t of tasks) {
      const chain = t.metadata["chain"] as string[];
      hops.add(chain.length - 1);
      expect(chain.length).toBeGreaterThanOrEqual(3);
      expect(new Set(chain).size).toBe(chain.length);
      expect(t.prompt).toContain(chain[0]);
      expect(t.prompt).not.toContain(chain[chain.length - 1]);
      expect(chain[chain.length - 1]).toBe(t.metadata.answer);
    }
    expect([...hops].sort()).toEqual([2, 3]);
  });

  it("files tasks cover every operation", async () => {
    const tasks = (await loadSuite("files:train?n=100")).tasks;
    expect(new Set(tasks.map((t) => t.metadata["operation"]))).toEqual(new Set(["create", "append", "rename", "move", "delete", "copy", "replace"]));
  });

  it("mix interleaves the three families round-robin and defaults to the train split", async () => {
    const mix = await loadSuite("mix?n=9&seed=2");
    expect(mix.tasks.map((t) => t.family)).toEqual(["arith", "files", "lookup", "arith", "files", "lookup", "arith", "files", "lookup"]);
    expect(mix.tasks.every((t) => t.split === "train")).toBe(true);
    expect(mix.tasks[3]).toEqual(arithFamily.generate("train", 2, 1));
  });
});

describe("calcfile: the first rung of tool arithmetic", () => {
  it("test phrasings are whole sentences never used in train, built from parts that train also uses", async () => {
    const family = calcfileFamily;
    expect(family.templates.train.length).toBeGreaterThan(40);
    expect(family.templates.test.length).toBeGreaterThan(10);
    expect(family.templates.test.filter((t) => family.templates.train.includes(t))).toEqual([]);
    const train = (await loadSuite("calcfile:train?n=400&seed=1")).tasks;
    const test = (await loadSuite("calcfile:test?n=100&seed=1")).tasks;
    const trainPrompts = new Set(train.map((t) => t.prompt.replace(/\b\w+\.txt\b/g, "F")));
    for (const t of test) expect(trainPrompts.has(t.prompt.replace(/\b\w+\.txt\b/g, "F"))).toBe(false);
    // Every opening, tool phrase and closing of a test sentence also occurs in some train sentence.
    const parts = (id: string): string[] => /o(\d)t(\d)c(\d)/.exec(id)!.slice(1).map((d, i) => `${"otc"[i]}${d}`);
    const trainParts = new Set(family.templates.train.flatMap(parts));
    for (const id of family.templates.test) for (const p of parts(id)) expect(trainParts.has(p)).toBe(true);
    const trainEntities = entitiesOf(train);
    expect([...entitiesOf(test)].filter((e) => trainEntities.has(e))).toEqual([]);
  });

  it("the prompt names the input and output files; the input file holds the expression; the oracle is one command", async () => {
    for (const t of (await loadSuite("calcfile:test?n=30&seed=5")).tasks) {
      const [input, output] = [Object.keys(t.files).find((f) => f !== "calc")!, t.metadata.answerFile!];
      expect(t.prompt).toContain(input);
      expect(t.prompt).toContain(output);
      expect(t.files[input]).toBe(`${t.metadata.expression}\n`);
      expect(t.metadata.oracle?.steps).toEqual([{ kind: "run", command: `./calc "$(cat ${input})" > ${output}` }]);
      expect(t.metadata.oracle?.answer).toBeUndefined();
    }
  });
});

describe("calcrun: calcfile's prompts, one output name", () => {
  it("shares calcfile's phrasing split, always names answer.txt, and regenerates from its id", async () => {
    expect(calcrunFamily.templates).toEqual(calcfileFamily.templates);
    const tasks = [...(await loadSuite("calcrun:train?n=60&seed=2")).tasks, ...(await loadSuite("calcrun:test?n=30&seed=2")).tasks];
    for (const t of tasks) {
      expect(t.family).toBe("calcrun");
      expect(t.metadata.answerFile).toBe("answer.txt");
      expect(t.prompt).toContain("answer.txt");
      expect(t.metadata.oracle?.steps).toEqual([{ kind: "run", command: './calc "$(cat expr.txt)" > answer.txt' }]);
      expect(builtinTaskById(t.id)).toEqual(t);
    }
    // Phrasings still vary: the policy must produce the same call from sentences it never saw.
    expect(new Set(tasks.map((t) => t.metadata.template)).size).toBeGreaterThan(30);
  });
});

describe("lookuprun: multi-hop lookup at rung zero", () => {
  it("lists the gold path's hops in question.txt, holds out names and whole phrasings, and is one fixed oracle call", async () => {
    const family = lookuprunFamily;
    expect(family.templates.test.length).toBeGreaterThan(5);
    expect(family.templates.test.filter((t) => family.templates.train.includes(t))).toEqual([]);
    const train = (await loadSuite("lookuprun:train?n=200&seed=1")).tasks;
    const test = (await loadSuite("lookuprun:test?n=60&seed=1")).tasks;
    const trainPrompts = new Set(train.map((t) => t.prompt));
    for (const t of test) expect(trainPrompts.has(t.prompt)).toBe(false);
    const trainEntities = entitiesOf(train);
    expect([...entitiesOf(test)].filter((e) => trainEntities.has(e))).toEqual([]);
    for (const t of [...train.slice(0, 40), ...test]) {
      const lines = (t.files["question.txt"] as string).trim().split("\n");
      const gold = t.metadata.goldPath as string[];
      expect(lines).toHaveLength(gold.length);
      expect(gold[0]!.startsWith(lines[0]!.split(" ")[0]!)).toBe(true);
      expect(t.metadata.hops).toBe(gold.length);
      expect(t.metadata.oracle?.steps).toEqual([{ kind: "run", command: "./search --chain question.txt > answer.txt" }]);
      expect(t.metadata.oracle?.answer).toBeUndefined();
      expect(builtinTaskById(t.id)).toEqual(t);
    }
    expect(new Set(test.map((t) => t.metadata.hops))).toEqual(new Set([2, 3]));
  });
});
