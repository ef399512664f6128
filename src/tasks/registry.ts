import { UserError } from "../core/errors.js";
import type { TaskFamily } from "./family.js";
import { arithFamily } from "./families/arith.js";
import { calcfileFamily, calcrunFamily } from "./families/calcfile.js";
import { lookuprunFamily } from "./families/lookuprun.js";
import { filesFamily } from "./families/files.js";
import { lookupFamily } from "./families/lookup.js";
import { loadSuiteDir } from "./load.js";
import { parseSuiteSpec, type SuiteSpec } from "./suite-spec.js";
import type { Split, Task } from "./task.js";

/** A named source of tasks (a generated family, a mix, a folder). */
export interface SuiteProvider {
  name: string;
  summary: string;
  load(spec: SuiteSpec, options: LoadSuiteOptions): Promise<Task[]>;
}

export interface LoadSuiteOptions {
  /** Absolute workspace path harnesses see (used to rewrite ClawGym prompts). Default /workspace. */
  workspaceRoot?: string;
}

export interface Suite {
  spec: string;
  name: string;
  split?: Split;
  tasks: Task[];
}

export const DEFAULT_COUNT = 100;
export const DEFAULT_SPLIT: Split = "train";

const families = new Map<string, TaskFamily>();
const providers = new Map<string, SuiteProvider>();

export function registerSuite(provider: SuiteProvider): void {
  providers.set(provider.name, provider);
}

export function listSuites(): { name: string; summary: string }[] {
  return [...providers.values()].map((p) => ({ name: p.name, summary: p.summary }));
}

export function getFamily(name: string): TaskFamily | undefined {
  return families.get(name);
}

/** Loads a suite from its spec (see suite-spec.ts). Generated suites default to the train split and n=100. */
export async function loadSuite(spec: string, options: LoadSuiteOptions = {}): Promise<Suite> {
  const parsed = parseSuiteSpec(spec);
  const provider = providers.get(parsed.name);
  if (!provider) {
    const known = [...providers.keys()].sort().join(", ");
    throw new UserError("unknown_suite", `unknown task suite "${parsed.name}" in "${spec}" (known: ${known}, dir:<path>)`);
  }
  const tasks = await provider.load(parsed, options);
  const suite: Suite = { spec, name: parsed.name, tasks };
  if (parsed.split) suite.split = parsed.split;
  return suite;
}

/** Regenerates a built-in task from its id (`<family>-<split>-s<seed>-<index>`), e.g. for an oracle. */
export function builtinTaskById(id: string): Task | undefined {
  const m = /^([a-z]+)-(train|test)-s(\d+)-(\d+)$/.exec(id);
  if (!m) return undefined;
  const family = families.get(m[1]!);
  return family?.generate(m[2] as Split, Number(m[3]), Number(m[4]));
}

function familyProvider(family: TaskFamily): SuiteProvider {
  return {
    name: family.name,
    summary: family.summary,
    load: (spec) => {
      const split = spec.split ?? DEFAULT_SPLIT;
      const seed = spec.seed ?? 0;
      return Promise.resolve(Array.from({ length: spec.n ?? DEFAULT_COUNT }, (_, i) => family.generate(split, seed, i)));
    },
  };
}

for (const family of [arithFamily, calcfileFamily, calcrunFamily, filesFamily, lookupFamily, lookuprunFamily]) {
  families.set(family.name, family);
  registerSuite(familyProvider(family));
}

registerSuite({
  name: "mix",
  summary: "arith, files and lookup interleaved round-robin (n counts all three together)",
  load: (spec) => {
    const split = spec.split ?? DEFAULT_SPLIT;
    const seed = spec.seed ?? 0;
    const all = [arithFamily, filesFamily, lookupFamily];
    const n = spec.n ?? DEFAULT_COUNT * all.length;
    return Promise.resolve(Array.from({ length: n }, (_, i) => all[i % all.length]!.generate(split, seed, Math.floor(i / all.length))));
  },
});

registerSuite({
  name: "dir",
  summary: "tasks from a folder: native layout (task.json) or ClawGym-Bench (data_entry.json); dir:<path>",
  load: (spec, options) => {
    if (spec.n !== undefined || spec.seed !== undefined) {
      throw new UserError("invalid_suite_spec", "n and seed apply to generated suites only, not dir:");
    }
    const dirOptions: Parameters<typeof loadSuiteDir>[1] = {};
    if (spec.split) dirOptions.split = spec.split;
    if (options.workspaceRoot) dirOptions.workspaceRoot = options.workspaceRoot;
    return loadSuiteDir(spec.path ?? "", dirOptions);
  },
});
