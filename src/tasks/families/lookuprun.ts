import { ANSWER_FILE, fill, taskId, type TaskFamily } from "../family.js";
import { splitOf } from "../holdout.js";
import { Rng } from "../prng.js";
import type { Split, Task } from "../task.js";
import { FACT, QUESTIONS, lookupTaskParts, walkChain, worldWithPath } from "./lookup.js";

/**
 * Multi-hop lookup at rung zero, what `calcrun` is to `arith`: the same generated worlds, question types, facts, search
 * tool and token-F1 verifier as `lookup`, but the hops are written out in `question.txt` (a first query, then one
 * relation per line) and `./search --chain question.txt` walks them, so the whole task is one fixed tool call
 * (`./search --chain question.txt > answer.txt`) in the harness's convention; through the central agent, one delegation
 * to the worker sub-agent plus its shell call. A ~1M model trained from scratch on CPU cannot copy made-up names out of
 * search results (docs/training.md), which `lookup` needs; this rung keeps the family's world and reward while asking
 * only for the right action and arguments. Held out: entity names (as in `lookup`) and whole prompt sentences
 * composed from slots (a compositional hold-out, as in `calcfile`).
 */

const OPENINGS = [
  "The question in question.txt must be answered",
  "Answer the multi-hop question stored in question.txt",
  "question.txt lists the hops of a lookup; resolve them",
  "Find the answer to the lookup described in question.txt",
  "Resolve the chain of facts written in question.txt",
];
const TOOLS = ["with ./search --chain", "using ./search --chain", "by running ./search --chain"];
const CLOSINGS = ["Write only the answer to answer.txt.", "Save the name alone in answer.txt.", "answer.txt must contain only the answer."];

const TEMPLATES: Record<Split, Record<string, string>> = { train: {}, test: {} };
for (let o = 0; o < OPENINGS.length; o++) {
  for (let t = 0; t < TOOLS.length; t++) {
    for (let c = 0; c < CLOSINGS.length; c++) {
      const id = `lookuprun.o${o}t${t}c${c}`;
      TEMPLATES[splitOf("lookuprun-phrasing", id)][id] = `${OPENINGS[o]} ${TOOLS[t]}. ${CLOSINGS[c]}`;
    }
  }
}

export const LOOKUPRUN_QUESTION_FILE = "question.txt";

function generate(split: Split, seed: number, index: number): Task {
  const rng = Rng.from("lookuprun", split, seed, index);
  const qtypeName = rng.pick(Object.keys(QUESTIONS).sort());
  const q = QUESTIONS[qtypeName]!;
  const { w, start } = worldWithPath(rng, split, q);
  // Hop k's line is the relation part of its query ("headquartered"); the first line names the start entity.
  const lines = q.path.map((rel, k) => (k === 0 ? FACT[rel].query(start) : FACT[rel].query("").trim()));
  const c = walkChain(w, start, q);
  const template = rng.pick(Object.keys(TEMPLATES[split]).sort());
  const { files, verifier, entities } = lookupTaskParts(rng, w, c);
  return {
    id: taskId("lookuprun", split, seed, index),
    family: "lookuprun",
    split,
    prompt: fill(TEMPLATES[split][template]!, {}),
    files: { ...files, [LOOKUPRUN_QUESTION_FILE]: `${lines.join("\n")}\n` },
    verifier,
    metadata: {
      hostTools: ["search"],
      template,
      question: qtypeName,
      difficulty: 0,
      hops: q.path.length,
      answer: c.answer,
      answerFile: ANSWER_FILE,
      chain: c.chain,
      goldPath: c.goldPath,
      entities,
      // No final-message answer: the reward is the file, and quoting the name would teach copying.
      oracle: { steps: [{ kind: "run", command: `./search --chain ${LOOKUPRUN_QUESTION_FILE} > ${ANSWER_FILE}` }] },
    },
  };
}

export const lookuprunFamily: TaskFamily = {
  name: "lookuprun",
  summary: "multi-hop lookup, rung zero: the hops are listed in question.txt and ./search --chain walks them (one fixed tool call); token-F1 reward",
  templates: { train: Object.keys(TEMPLATES.train), test: Object.keys(TEMPLATES.test) },
  generate,
};
