import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatSummary, summarise } from "../../eval/metrics.js";
import { intOption, parseOptions } from "../args.js";
import type { Command } from "../command.js";
import { rolloutOptions, rolloutUsage, runRolloutJob } from "../rollout-job.js";

const usage = `Usage: harnessrl eval --engine <spec> --tasks <suite>[:split] --harness <name,...> --samples k [options]

Evaluates a policy through sandboxed harnesses and reports pass@1, pass@k, mean score and F1 per harness and per
task family, as a table (and JSON with --json; always written to <out>/eval.json).

Options:
${rolloutUsage}`;

export const evalCommand: Command = {
  name: "eval",
  summary: "evaluate a policy through harnesses: pass@1, pass@k, score, F1 per harness and family",
  usage,
  async run(argv) {
    const values = parseOptions(argv, rolloutOptions, usage);
    const { outDir, results } = await runRolloutJob("eval", values, { tasks: "mix:test?n=6" });
    // The key goes into eval.json, so that `harnessrl compare` can tell two evaluations drew common random numbers.
    const summary = { ...summarise(results, intOption("samples", values.samples, 1, 1)), ...(values.seeds === undefined ? {} : { samplingSeeds: values.seeds }) };
    writeFileSync(join(outDir, "eval.json"), `${JSON.stringify(summary, null, 2)}\n`);
    if (values.json) console.log(JSON.stringify({ outDir, summary }));
    else console.log(`${formatSummary(summary)}\n\nresults: ${outDir}`);
    return 0;
  },
};
