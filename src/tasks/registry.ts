import { Registry } from "../core/registry.js";
import type { TaskFamily } from "./family.js";
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

/** Task suites by the name a suite spec starts with; filled by registerBuiltins() (src/builtins.ts) and library users. */
export const suites = new Registry<SuiteProvider>("task suite", "unknown_suite");
/** Generating task families, so a built-in task can be regenerated from its id. Each is also a suite. */
export const taskFamilies = new Registry<TaskFamily>("task family", "unknown_task_family");

export function registerSuite(provider: SuiteProvider): void {
  suites.register(provider);
}

/** Registers a generating family and the suite of the same name that generates from it. */
export function registerTaskFamily(family: TaskFamily): void {
  taskFamilies.register(family);
  suites.register(familySuite(family));
}

export function listSuites(): { name: string; summary: string }[] {
  return suites.list();
}

export function getFamily(name: string): TaskFamily | undefined {
  return taskFamilies.find(name);
}

/** Loads a suite from its spec (see suite-spec.ts). Generated suites default to the train split and n=100. */
export async function loadSuite(spec: string, options: LoadSuiteOptions = {}): Promise<Suite> {
  const parsed = parseSuiteSpec(spec);
  const tasks = await suites.get(parsed.name, `"${spec}"`).load(parsed, options);
  const suite: Suite = { spec, name: parsed.name, tasks };
  if (parsed.split) suite.split = parsed.split;
  return suite;
}

/** Regenerates a built-in task from its id (`<family>-<split>-s<seed>-<index>`), e.g. for an oracle. */
export function builtinTaskById(id: string): Task | undefined {
  const m = /^([a-z]+)-(train|test)-s(\d+)-(\d+)$/.exec(id);
  if (!m) return undefined;
  const family = taskFamilies.find(m[1]!);
  return family?.generate(m[2] as Split, Number(m[3]), Number(m[4]));
}

function familySuite(family: TaskFamily): SuiteProvider {
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
