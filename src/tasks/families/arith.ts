import { ANSWER_FILE, fill, taskId, type TaskFamily } from "../family.js";
import { drawFor } from "../holdout.js";
import { Rng } from "../prng.js";
import { CALC_FILE } from "../programs/calc.js";
import { arithVerifier } from "../programs/verifiers.js";
import type { Split, Task } from "../task.js";

/**
 * Tool arithmetic: compute an expression with `./calc` and write the number to answer.txt; exact-match reward.
 * Held out: the phrasing templates (test phrasings never appear in train) and the operands (each integer belongs to
 * one split by hash, see holdout.ts). Expression shapes are shared: the skill is "call the tool, copy the result".
 */

const TEMPLATES: Record<Split, Record<string, string>> = {
  train: {
    "arith.q1": "What is {e}? Use ./calc and write only the number to answer.txt.",
    "arith.q2": "Compute {e} with ./calc, then write just the result to answer.txt.",
    "arith.q3": "Use ./calc to work out {e}. Put only the number in answer.txt.",
    "arith.q4": "Calculate {e} using the ./calc tool and save the number alone in answer.txt.",
  },
  test: {
    "arith.q5": "Find the value of {e} (use ./calc). Write the number only to answer.txt.",
    "arith.q6": "Run ./calc to evaluate {e}; answer.txt must contain only the result.",
  },
};

interface Shape {
  name: string;
  difficulty: number;
  /** Operand ranges, in order. */
  ranges: [number, number][];
  render(ops: number[]): string;
  value(ops: bigint[]): bigint;
}

const SHAPES: Shape[] = [
  { name: "mul", difficulty: 2, ranges: [[1000, 9999], [12, 999]], render: ([a, b]) => `${a} * ${b}`, value: ([a, b]) => a! * b! },
  { name: "add3", difficulty: 1, ranges: [[1000, 99999], [1000, 99999], [1000, 99999]], render: ([a, b, c]) => `${a} + ${b} + ${c}`, value: ([a, b, c]) => a! + b! + c! },
  { name: "sub", difficulty: 1, ranges: [[50000, 99999], [10000, 49999]], render: ([a, b]) => `${a} - ${b}`, value: ([a, b]) => a! - b! },
  { name: "muladd", difficulty: 3, ranges: [[100, 999], [12, 99], [1000, 9999]], render: ([a, b, c]) => `${a} * ${b} + ${c}`, value: ([a, b, c]) => a! * b! + c! },
];

function generate(split: Split, seed: number, index: number): Task {
  const rng = Rng.from("arith", split, seed, index);
  const shape = rng.pick(SHAPES);
  const taken = new Set<string>();
  const ops = shape.ranges.map(([lo, hi]) => drawFor(rng, split, "operand", taken, (r) => r.int(lo, hi)));
  const expr = shape.render(ops);
  const answer = shape.value(ops.map((o) => BigInt(o))).toString();
  const templates = TEMPLATES[split];
  const template = rng.pick(Object.keys(templates).sort());
  const prompt = fill(templates[template]!, { e: expr });
  const calcCommand = `./calc "${expr}"`;
  return {
    id: taskId("arith", split, seed, index),
    family: "arith",
    split,
    prompt,
    files: { calc: CALC_FILE },
    verifier: arithVerifier(answer, ANSWER_FILE),
    metadata: {
      hostTools: ["calc"],
      template,
      shape: shape.name,
      difficulty: shape.difficulty,
      answer,
      answerFile: ANSWER_FILE,
      entities: ops.map(String),
      expression: expr,
      oracle: {
        steps: [
          { kind: "run", command: calcCommand, expect: answer },
          { kind: "write", path: ANSWER_FILE, content: answer },
        ],
        answer,
      },
    },
  };
}

export const arithFamily: TaskFamily = {
  name: "arith",
  summary: "tool arithmetic: evaluate an expression with ./calc, exact-match answer in answer.txt",
  templates: { train: Object.keys(TEMPLATES.train), test: Object.keys(TEMPLATES.test) },
  generate,
};
