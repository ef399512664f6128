import { ROLLOUT_STATUSES } from "../../tasks/rollout-result.js";
import { parseOptions } from "../args.js";
import type { Command } from "../command.js";
import { rolloutOptions, rolloutUsage, runRolloutJob } from "../rollout-job.js";

const usage = `Usage: harnessrl rollout [options]

Runs task × harness × samples in sandboxes through the capture proxy and records per rollout: status (ok,
task_failed, timeout, oom, harness_crash, infra_error), timings, exit code, bounded output and the verifier result.
Writes <out>/records.sqlite (every model call) and <out>/rollouts.jsonl.

Options:
${rolloutUsage}`;

export const rolloutCommand: Command = {
  name: "rollout",
  summary: "run tasks × harnesses × samples in sandboxes and record everything",
  usage,
  async run(argv) {
    const values = parseOptions(argv, rolloutOptions, usage);
    const { outDir, results } = await runRolloutJob("rollout", values, { tasks: "mix:train?n=6" });
    const counts = Object.fromEntries(ROLLOUT_STATUSES.map((s) => [s, results.filter((r) => r.status === s).length]));
    if (values.json) console.log(JSON.stringify({ outDir, counts, results }));
    else {
      console.log(`${results.length} rollouts → ${outDir}`);
      console.log(Object.entries(counts).map(([s, n]) => `${s}=${n}`).join("  "));
    }
    return counts.infra_error === results.length && results.length > 0 ? 1 : 0;
  },
};
