import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { UserError, errorMessage } from "../core/errors.js";
import type { ComparableEvaluation } from "./compare.js";

// What a comparison needs of an evaluation summary (eval.json, eval-before.json, eval-after.json: EvalSummary), checked
// as it is read: the file may be hand-edited, cut short or someone else's, and a rate outside [0, 1] or a standard
// error below 0 would turn into a confident wrong answer.
const rate = z.number().min(0).max(1);
const metricsSchema = z.looseObject({
  passAt1: rate,
  passAt1Stderr: z.number().min(0),
  groupRates: z.record(z.string(), rate),
  lostGroups: z.array(z.string()).optional(),
});
const evaluationSchema = z.looseObject({
  overall: metricsSchema,
  byHarness: z.record(z.string(), metricsSchema).default({}),
  samplingSeeds: z.string().optional(),
});

/** Which of a run directory's evaluations an argument names: `DIR:before`, `DIR:after`, or `DIR` (after, else eval.json). */
const PHASES = { before: ["eval-before.json"], after: ["eval-after.json"], latest: ["eval-after.json", "eval.json"] } as const;

/**
 * The evaluation file an argument names: a JSON file itself, or a run directory's evaluation (`RUN_DIR:before`,
 * `RUN_DIR:after`; a bare `RUN_DIR` is its after-RL evaluation, or the `eval.json` of `harnessrl eval --out RUN_DIR`).
 */
export function evaluationPath(arg: string): string {
  const phase = /^(.*):(before|after)$/.exec(arg);
  const dir = phase?.[1] ?? arg;
  const names = PHASES[(phase?.[2] as "before" | "after" | undefined) ?? "latest"];
  if (phase === null && existsSync(arg) && statSync(arg).isFile()) return arg;
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UserError("run_dir_not_found", `${arg}: no such evaluation file or run directory`);
  for (const name of names) {
    const path = join(dir, name);
    if (existsSync(path)) return path;
  }
  throw new UserError("evaluation_not_found", `${dir} has no ${names.join(" or ")} (has the evaluation finished?)`);
}

/** Reads and checks one evaluation summary file (EvalSummary as the trainer and `harnessrl eval` write it). */
export function readEvaluation(path: string): ComparableEvaluation {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new UserError("invalid_evaluation", `${path}: not a readable JSON file (${errorMessage(e)})`);
  }
  const parsed = evaluationSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UserError("invalid_evaluation", `${path}: not an evaluation summary (${issue ? `${issue.path.join(".") || "(root)"}: ${issue.message}` : "malformed"})`);
  }
  const e = parsed.data;
  return { overall: e.overall, byHarness: e.byHarness, ...(e.samplingSeeds !== undefined ? { samplingSeeds: e.samplingSeeds } : {}) };
}
