import { UserError } from "../core/errors.js";
import type { TaskFamily } from "./family.js";
import { arithFamily } from "./families/arith.js";
import { calcfileFamily, calcrunFamily } from "./families/calcfile.js";
import { filesFamily } from "./families/files.js";
import { lookupFamily } from "./families/lookup.js";
import { lookuprunFamily } from "./families/lookuprun.js";
import { loadSuiteDir } from "./load.js";
import { DEFAULT_COUNT, DEFAULT_SPLIT, type SuiteProvider } from "./registry.js";

/** The built-in generating families (registered by src/builtins.ts, each also as a suite of its name). */
export const builtinTaskFamilies: readonly TaskFamily[] = [arithFamily, calcfileFamily, calcrunFamily, filesFamily, lookupFamily, lookuprunFamily];

const mixSuite: SuiteProvider = {
  name: "mix",
  summary: "arith, files and lookup interleaved round-robin (n counts all three together)",
  load: (spec) => {
    const split = spec.split ?? DEFAULT_SPLIT;
    const seed = spec.seed ?? 0;
    const all = [arithFamily, filesFamily, lookupFamily];
    const n = spec.n ?? DEFAULT_COUNT * all.length;
    return Promise.resolve(Array.from({ length: n }, (_, i) => all[i % all.length]!.generate(split, seed, Math.floor(i / all.length))));
  },
};

const dirSuite: SuiteProvider = {
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
};

/** The built-in suites that are not a single family (registered by src/builtins.ts). */
export const builtinSuites: readonly SuiteProvider[] = [mixSuite, dirSuite];
