import { resolve } from "node:path";
import { checkRunConfigNames } from "../../run/check-names.js";
import { buildRunContext } from "../../run/context.js";
import { configCheckLine, loadRunConfigSource } from "../../train/config.js";
import { parseOverride } from "../../train/config-overrides.js";
import { runTraining } from "../../train/orchestrator.js";
import { checkClusterTraining } from "../../train/cluster-launch.js";
import { parseOptions } from "../args.js";
import type { Command } from "../command.js";

const usage = `Usage: harnessrl train --config <file.yaml> [--set path=value]... [--run-dir DIR] [--check]

Runs RL training as the config describes into a run directory (default runs/<name>): config copy, metrics.jsonl,
checkpoints, policy versions, records.sqlite, rollouts.jsonl, eval-before/after.json, summary.json and report.html.
Run the same command again to resume after a crash. With a cluster: section (and engine.kind: llamacpp-http), each
step's rollouts run as jobs on rollout nodes (harnessrl node) and train from the central store (docs/cluster.md).

--set    change one config value without editing the file (repeatable): --set budget.steps=30 --set seed=2
         --set harnesses=[pi,codex]; the value is YAML, null removes the key (back to its default). The run
         directory's config.yaml is the file with these applied; resuming without them is a config change.
--check  validate the whole config (every section, cross-field rules, and that every harness, task suite, sandbox,
         trainer and engine it names exists) and exit: one OK line, or one line per error
         with the dotted path of the bad key (exit 2).`;

export const trainCommand: Command = {
  name: "train",
  summary: "train a policy through harnesses (tree-GRPO / tree-PPO) from a YAML config",
  usage,
  async run(argv) {
    const values = parseOptions(argv, { config: { type: "string" }, set: { type: "string", multiple: true }, "run-dir": { type: "string" }, check: { type: "boolean" } }, usage);
    if (!values.config) {
      console.error(usage);
      return 2;
    }
    const { config, text } = loadRunConfigSource(values.config, (values.set ?? []).map(parseOverride));
    if (values.check) {
      checkRunConfigNames(config, values.config);
      checkClusterTraining(config);
      console.log(configCheckLine(values.config, config));
      return 0;
    }
    const runDir = resolve(values["run-dir"] ?? `runs/${config.name}`);
    const summary = await runTraining(buildRunContext(config, { runDir, configPath: resolve(values.config), configText: text }));
    console.log(JSON.stringify(summary, null, 2));
    return 0;
  },
};
