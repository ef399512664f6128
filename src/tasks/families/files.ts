import { fill, taskId, type TaskFamily } from "../family.js";
import { drawFor } from "../holdout.js";
import { Rng } from "../prng.js";
import { FILES_VERIFIER } from "../programs/verifiers.js";
import { shellQuote } from "../shell.js";
import { VERIFIER_DIR, type OracleStep, type Split, type Task } from "../task.js";

/**
 * Workspace file operations (ClawGym-like): create, append to, rename, move, delete, copy and edit files in a small
 * generated workspace; the verifier inspects the final state with one sub-score per requirement.
 * Held out: phrasing templates (one train and one test phrasing per operation) and the words used for file names,
 * directory names and contents (each word belongs to one split by hash).
 */

const WORDS = [
  "apple", "anchor", "badge", "basket", "beacon", "berry", "blanket", "bottle", "bridge", "bucket", "cabin", "camera",
  "candle", "canyon", "carpet", "castle", "cedar", "chalk", "cherry", "cliff", "cloud", "clover", "comet", "copper",
  "coral", "cotton", "crystal", "desert", "dolphin", "dragon", "eagle", "ember", "engine", "falcon", "feather", "fern",
  "forest", "fossil", "garden", "garlic", "ginger", "glacier", "granite", "harbor", "hazel", "helmet", "honey",
  "island", "ivory", "jacket", "jasmine", "jungle", "kettle", "kite", "ladder", "lantern", "lemon", "lily", "lizard",
  "magnet", "maple", "marble", "meadow", "mirror", "monkey", "mosaic", "needle", "nectar", "oasis", "olive", "orbit",
  "otter", "paddle", "panda", "pebble", "pepper", "piano", "pillow", "planet", "pocket", "pumpkin", "quartz", "rabbit",
  "radar", "raven", "ribbon", "river", "rocket", "saddle", "salmon", "shadow", "silver", "socket", "spider", "spruce",
  "tablet", "temple", "thunder", "tiger", "timber", "tomato", "tulip", "tunnel", "velvet", "violet", "walnut",
  "wagon", "willow", "window", "winter", "yogurt", "zebra", "acorn", "almond", "bamboo", "biscuit", "button", "cactus",
  "canvas", "cobalt", "dune", "falafel", "goblet", "hammock", "igloo", "juniper", "kayak", "lagoon", "mango", "nutmeg",
  "orchid", "parrot", "quill", "saffron", "thistle", "umbrella", "vortex", "whistle",
];

type Op = "create" | "append" | "rename" | "move" | "delete" | "copy" | "replace";

const TEMPLATES: Record<Split, Record<string, string>> = {
  train: {
    "files.create.1": "Create a file {path} containing exactly this line: {content}",
    "files.append.1": "Append the line \"{line}\" to the end of {a}.",
    "files.rename.1": "Rename {a} to {b}.",
    "files.move.1": "Create a directory {d} and move {a} into it.",
    "files.delete.1": "Delete the file {a}.",
    "files.copy.1": "Copy {a} to {b}.",
    "files.replace.1": "In {a}, replace the word {w1} with {w2}.",
  },
  test: {
    "files.create.2": "Make a new file named {path} whose only line is: {content}",
    "files.append.2": "Add \"{line}\" as a new last line of {a}.",
    "files.rename.2": "Change the name of file {a} to {b}, keeping its content.",
    "files.move.2": "Put {a} inside a new folder named {d} (move it, do not copy).",
    "files.delete.2": "Remove {a} from the workspace; leave the other files alone.",
    "files.copy.2": "Duplicate {a} as {b}, keeping the original.",
    "files.replace.2": "Edit {a} so that every {w1} becomes {w2}.",
  },
};

const DIFFICULTY: Record<Op, number> = { create: 1, delete: 1, rename: 1, append: 2, copy: 2, move: 2, replace: 3 };

interface Check {
  kind: "file" | "absent" | "dir";
  path: string;
  content?: string;
  role: "change" | "keep";
}

function opOf(template: string): Op {
  return template.split(".")[1] as Op;
}

function generate(split: Split, seed: number, index: number): Task {
  const rng = Rng.from("files", split, seed, index);
  const taken = new Set<string>();
  const word = (): string => drawFor(rng, split, "word", taken, (r) => r.pick(WORDS));
  const line = (): string => `${word()} ${word()} ${rng.int(10, 99)}`;
  const ext = (): string => rng.pick([".txt", ".md"]);

  // Initial workspace: 3–4 files, some inside one sub-directory.
  const sub = word();
  const initial = new Map<string, string>();
  const nFiles = rng.int(3, 4);
  for (let i = 0; i < nFiles; i++) {
    const path = (i >= 2 && rng.next() < 0.6 ? `${sub}/` : "") + word() + ext();
    initial.set(path, `${line()}\n${rng.next() < 0.5 ? `${line()}\n` : ""}`);
  }
  const paths = [...initial.keys()];
  const template = rng.pick(Object.keys(TEMPLATES[split]).sort());
  const op = opOf(template);
  const a = rng.pick(paths);
  const aContent = initial.get(a)!;
  const aDir = a.includes("/") ? a.slice(0, a.lastIndexOf("/") + 1) : "";
  const aBase = a.slice(aDir.length);

  const checks: Check[] = [];
  const steps: OracleStep[] = [];
  const slots: Record<string, string> = { a };
  let touched: string[] = [a];
  switch (op) {
    case "create": {
      const path = (rng.next() < 0.3 ? `${sub}/` : "") + word() + ext();
      const content = line();
      Object.assign(slots, { path, content });
      checks.push({ kind: "file", path, content: `${content}\n`, role: "change" });
      steps.push({ kind: "write", path, content: `${content}\n` });
      touched = [];
      break;
    }
    case "append": {
      const l = line();
      slots.line = l;
      checks.push({ kind: "file", path: a, content: `${aContent}${l}\n`, role: "change" });
      steps.push({ kind: "run", command: `echo ${shellQuote(l)} >> ${shellQuote(a)}` });
      break;
    }
    case "rename":
    case "copy": {
      const b = aDir + word() + ext();
      slots.b = b;
      checks.push({ kind: "file", path: b, content: aContent, role: "change" });
      if (op === "rename") {
        checks.push({ kind: "absent", path: a, role: "change" });
        steps.push({ kind: "run", command: `mv ${shellQuote(a)} ${shellQuote(b)}` });
      } else {
        checks.push({ kind: "file", path: a, content: aContent, role: "keep" });
        steps.push({ kind: "run", command: `cp ${shellQuote(a)} ${shellQuote(b)}` });
        touched = [];
      }
      break;
    }
    case "move": {
      const d = word();
      slots.d = d;
      checks.push({ kind: "dir", path: d, role: "change" });
      checks.push({ kind: "file", path: `${d}/${aBase}`, content: aContent, role: "change" });
      checks.push({ kind: "absent", path: a, role: "change" });
      steps.push({ kind: "run", command: `mkdir -p ${shellQuote(d)} && mv ${shellQuote(a)} ${shellQuote(d)}/` });
      break;
    }
    case "delete": {
      checks.push({ kind: "absent", path: a, role: "change" });
      steps.push({ kind: "run", command: `rm ${shellQuote(a)}` });
      break;
    }
    case "replace": {
      const w1 = aContent.split(/\s+/)[0]!;
      const w2 = word();
      Object.assign(slots, { w1, w2 });
      const edited = aContent.split(w1).join(w2);
      checks.push({ kind: "file", path: a, content: edited, role: "change" });
      steps.push({ kind: "write", path: a, content: edited });
      break;
    }
  }
  for (const [p, c] of initial) if (!touched.includes(p) && !checks.some((k) => k.path === p)) checks.push({ kind: "file", path: p, content: c, role: "keep" });

  const files: Record<string, string> = Object.fromEntries(initial);
  return {
    id: taskId("files", split, seed, index),
    family: "files",
    split,
    prompt: fill(TEMPLATES[split][template]!, slots),
    files,
    verifier: {
      files: { "verify.cjs": FILES_VERIFIER, "expected.json": JSON.stringify({ checks }) },
      command: ["node", `${VERIFIER_DIR}/verify.cjs`],
    },
    metadata: {
      template,
      operation: op,
      difficulty: DIFFICULTY[op],
      entities: [...taken].sort(),
      checks: checks.length,
      oracle: { steps },
    },
  };
}

export const filesFamily: TaskFamily = {
  name: "files",
  summary: "workspace file operations (create, append, rename, move, delete, copy, replace); verifier checks the files",
  templates: { train: Object.keys(TEMPLATES.train), test: Object.keys(TEMPLATES.test) },
  generate,
};
