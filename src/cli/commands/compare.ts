import { parseArgs } from "node:util";
import { UserError, errorMessage } from "../../core/errors.js";
import { compareEvaluations, formatComparison } from "../../eval/compare.js";
import { evaluationPath, readEvaluation } from "../../eval/evaluation-file.js";
import type { Command } from "../command.js";

const usage = `Usage:
  harnessrl compare A B [--json]

Held-out pass@1 of evaluation B against evaluation A (B − A), overall and per harness, with the standard error of the
difference: paired over the (task, harness) groups when both evaluated the same groups, and with common random numbers
when both sampled under the same evaluation key (the quickstart's and train's evaluations do). The way to tell whether
a change to a recipe helped: run both recipes from copies of one warm start and compare their after-RL evaluations.

A and B are each an evaluation file (eval.json, eval-before.json, eval-after.json) or a run directory:
  RUN_DIR          its after-RL evaluation (eval-after.json), or eval.json for an \`harnessrl eval\` output folder
  RUN_DIR:before   its evaluation before RL
  RUN_DIR:after    its evaluation after RL
(\`harnessrl compare RUN:before RUN:after\` is the run's own change, as its summary reports it.)

Options:
  --json           print the comparison as JSON`;

async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, strict: true, allowPositionals: true, options: { json: { type: "boolean", default: false } } });
  } catch (e) {
    throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
  }
  const [a, b, ...rest] = parsed.positionals;
  if (a === undefined || b === undefined || rest.length > 0) throw new UserError("invalid_arguments", `compare needs exactly two evaluations, A and B\n\n${usage}`);
  const paths = { a: evaluationPath(a), b: evaluationPath(b) };
  const comparison = compareEvaluations(readEvaluation(paths.a), readEvaluation(paths.b));
  console.log(parsed.values.json ? JSON.stringify({ a: paths.a, b: paths.b, ...comparison }) : formatComparison(comparison, paths));
  return 0;
}

export const compareCommand: Command = { name: "compare", summary: "held-out pass@1 of one evaluation against another, paired (two runs, or a run's before and after)", usage, run };
