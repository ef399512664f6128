import { fill, taskId, type TaskFamily } from "../family.js";
import { drawFor, splitOf } from "../holdout.js";
import { Rng } from "../prng.js";
import { CALC_FILE } from "../programs/calc.js";
import { arithVerifier } from "../programs/verifiers.js";
import type { Split, Task } from "../task.js";

/**
 * Tool arithmetic at the first rung of difficulty, for models trained from scratch: the expression is in a file whose
 * name the prompt gives, and the result must go to a file the prompt names; exact-match reward. Solving it takes one
 * well-formed shell tool call in the harness's own calling convention, e.g. `./calc "$(cat expr.txt)" > result.txt`,
 * reading the output file's name off the prompt (one of three), but no copying of arbitrary text: a ~1M-parameter
 * model does not learn to copy digit strings within minutes of CPU training (docs/training.md), while `arith` needs
 * exactly that. Held out: phrasings (whole sentences, by hash; see below) and operands (by hash, see holdout.ts).
 */

/**
 * Phrasings are composed from three slots (opening naming the input file, how to use the tool, closing naming the
 * output file): 6 × 3 × 4 = 72 sentences. Each whole sentence belongs to one split by hash, about a quarter to test:
 * test phrasings never appear in training, while their parts do (a compositional hold-out). A model trained from
 * scratch on a handful of fixed sentences keys on their exact shape and fails on any new one; varied training
 * phrasings teach it which words matter (the two file names).
 */
const OPENINGS = [
  "The expression in {in} must be evaluated",
  "Evaluate the arithmetic stored in {in}",
  "{in} holds an expression; compute it",
  "Work out the value of the expression in {in}",
  "Read the expression from {in} and calculate it",
  "Find the result of the expression written in {in}",
];
const TOOLS = ["with ./calc", "using ./calc", "by running ./calc"];
const CLOSINGS = [
  "Write only the number to {out}.",
  "Save the number alone in {out}.",
  "Put just the result in {out}.",
  "{out} must contain only the result.",
];

function phrasing(o: number, t: number, c: number): { id: string; text: string } {
  return { id: `calcfile.o${o}t${t}c${c}`, text: `${OPENINGS[o]} ${TOOLS[t]}. ${CLOSINGS[c]}` };
}

const TEMPLATES: Record<Split, Record<string, string>> = { train: {}, test: {} };
for (let o = 0; o < OPENINGS.length; o++) {
  for (let t = 0; t < TOOLS.length; t++) {
    for (let c = 0; c < CLOSINGS.length; c++) {
      const p = phrasing(o, t, c);
      TEMPLATES[splitOf("calcfile-phrasing", p.id)][p.id] = p.text;
    }
  }
}

/**
 * One input name: the prompt's job is to say where the result goes. With three input names as well, a freshly
 * warm-started ~1M model is right by chance 1/9 of the time and GRPO on 2 CPU cores sees almost no signal (measured:
 * 3–7% train reward, most groups zero-variance, for 6 steps); with one, chance is 1/3 and RL can teach the reading.
 */
export const CALCFILE_INPUTS = ["expr.txt"] as const;
export const CALCFILE_OUTPUTS = ["answer.txt", "result.txt", "output.txt"] as const;

const SHAPES: { name: string; render(a: number, b: number): string; value(a: bigint, b: bigint): bigint }[] = [
  { name: "add", render: (a, b) => `${a} + ${b}`, value: (a, b) => a + b },
  { name: "sub", render: (a, b) => `${a} - ${b}`, value: (a, b) => a - b },
  { name: "mul", render: (a, b) => `${a} * ${b}`, value: (a, b) => a * b },
];

function generator(family: string, outputs: readonly string[]): (split: Split, seed: number, index: number) => Task {
  return (split, seed, index) => {
    const rng = Rng.from(family, split, seed, index);
    const shape = rng.pick(SHAPES);
    const taken = new Set<string>();
    const a = drawFor(rng, split, "operand", taken, (r) => r.int(100, 9999));
    const b = drawFor(rng, split, "operand", taken, (r) => r.int(10, 999));
    const expr = shape.render(a, b);
    const answer = shape.value(BigInt(a), BigInt(b)).toString();
    const input = rng.pick([...CALCFILE_INPUTS]);
    const output = rng.pick([...outputs]);
    const templates = TEMPLATES[split];
    const template = rng.pick(Object.keys(templates).sort());
    return {
      id: taskId(family, split, seed, index),
      family,
      split,
      prompt: fill(templates[template]!, { in: input, out: output }),
      files: { calc: CALC_FILE, [input]: `${expr}\n` },
      verifier: arithVerifier(answer, output),
      metadata: {
        hostTools: ["calc"],
        template,
        shape: shape.name,
        difficulty: 1,
        answer,
        answerFile: output,
        entities: [String(a), String(b)],
        expression: expr,
        // No `answer` for the oracle's final message: the reward is the file, and a final message quoting the number
        // would teach copying that this rung deliberately leaves out.
        oracle: { steps: [{ kind: "run", command: `./calc "$(cat ${input})" > ${output}` }] },
      },
    };
  };
}

const templates = { train: Object.keys(TEMPLATES.train), test: Object.keys(TEMPLATES.test) };

export const calcfileFamily: TaskFamily = {
  name: "calcfile",
  summary: "tool arithmetic, first rung: the expression is in a named file, the result goes to a named file (one tool call)",
  templates,
  generate: generator("calcfile", CALCFILE_OUTPUTS),
};

/**
 * The rung below: the same prompts, always naming answer.txt, so the right tool call is one fixed string per harness
 * whatever the phrasing. What it measures is whether the policy produces that call reliably when sampling at
 * temperature 1 on phrasings it never saw; the quickstart's task, because a ~1M model warm-started for a few minutes
 * does not learn to read the output name in `calcfile` (its choice among the three stays at chance; docs/training.md).
 */
export const calcrunFamily: TaskFamily = {
  name: "calcrun",
  summary: "tool arithmetic, rung zero: calcfile's prompts with one output name (answer.txt), i.e. one fixed tool call",
  templates,
  generate: generator("calcrun", ["answer.txt"]),
};
