import { describe, expect, it } from "vitest";
import { ANSWER_FILE } from "../../src/tasks/family.js";
import { Rng } from "../../src/tasks/prng.js";
import { loadSuite } from "../../src/tasks/registry.js";
import type { OracleStep } from "../../src/tasks/task.js";
import { attempt, mapPool, mean, oracleSteps } from "./helpers.js";

/** Baselines that must not earn reward, measured by running the real verifiers over many generated tasks. */

const CONCURRENCY = 4;

function answer(content: string): OracleStep {
  return { kind: "write", path: ANSWER_FILE, content };
}

function randomWord(rng: Rng): string {
  return Array.from({ length: rng.int(3, 9) }, () => String.fromCharCode(97 + rng.int(0, 25))).join("");
}

describe("empty and random policies score ~0 ", () => {
  it.each([["arith"], ["calcfile"], ["calcrun"], ["files"], ["lookup"], ["lookuprun"]])("%s: doing nothing scores 0 on every one of 40 tasks", async (family) => {
    const tasks = (await loadSuite(`${family}:test?n=40&seed=11`)).tasks;
    const results = await mapPool(tasks, CONCURRENCY, (t) => attempt(t, []));
    expect(results.map((r) => r.result.score)).toEqual(tasks.map(() => 0));
  });

  it.each([["arith"], ["lookup"]])("%s: random answers (numbers, words, other entities) over 100 tasks average below 0.02", async (family) => {
    const tasks = (await loadSuite(`${family}:train?n=100&seed=12`)).tasks;
    const rng = new Rng(12);
    const results = await mapPool(tasks, CONCURRENCY, (t) => {
      const gold = t.metadata.answer!;
      const others = (t.metadata.entities ?? []).filter((e) => e !== gold);
      const kind = rng.int(0, 2);
      const guess = kind === 0 ? String(rng.int(0, 10 ** gold.length)) : kind === 1 ? `${randomWord(rng)} ${randomWord(rng)}` : others.length ? rng.pick(others) : randomWord(rng);
      return attempt(t, [answer(guess)]);
    });
    expect(mean(results.map((r) => r.result.score))).toBeLessThan(0.02);
  });

  it("files: random workspace edits (another task's solution, stray files) over 60 tasks average below 0.02", async () => {
    const tasks = (await loadSuite("files:train?n=60&seed=13")).tasks;
    const rng = new Rng(13);
    const results = await mapPool(tasks, CONCURRENCY, (t) => {
      const other = tasks[(tasks.indexOf(t) + 1 + rng.int(0, 40)) % tasks.length]!;
      const steps: OracleStep[] = [
        { kind: "run", command: `${oracleSteps(other).map((s) => (s.kind === "run" ? s.command : "true")).join(" ; ")} ; true` },
        { kind: "write", path: `${randomWord(rng)}.txt`, content: `${randomWord(rng)}\n` },
        answer(randomWord(rng)),
      ];
      return attempt(t, steps);
    });
    expect(mean(results.map((r) => r.result.score))).toBeLessThan(0.02);
  });
});

