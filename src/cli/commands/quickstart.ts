import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkRunConfigNames } from "../../run/check-names.js";
import { buildRunContext } from "../../run/context.js";
import { configCheckLine, loadRunConfigSource } from "../../train/config.js";
import { parseOverride } from "../../train/config-overrides.js";
import { formatProbability } from "../../train/demo-probability.js";
import { runTraining, type PassDelta, type PassTable, type RunSummary } from "../../train/orchestrator.js";
import { parseOptions } from "../args.js";
import type { Command } from "../command.js";

const usage = `Usage: harnessrl quickstart [--run-dir DIR] [--config FILE] [--set path=value]... [--check]

From nothing, on CPU: creates a ~1M-parameter model, warm-starts it on oracle demonstrations, trains it with tree-GRPO
through two built-in harnesses on built-in tasks, evaluates it on held-out tasks before and after, and writes the
report (report.html) and summary.json into the run directory (default runs/quickstart). Resumes if interrupted.
--set changes one config value (repeatable; as \`harnessrl train --set\`), e.g. --set seed=3 --set model.seed=3.
--check validates the config and exits (as \`harnessrl train --check\`).`;

/** configs/quickstart.yaml next to the installed package. */
function defaultConfig(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json")) && dirname(dir) !== dir) dir = dirname(dir);
  return join(dir, "configs", "quickstart.yaml");
}

function line(label: string, t: PassTable | null): string {
  if (!t) return `${label}: -`;
  const per = Object.entries(t.byHarness).map(([h, v]) => `${h} ${(100 * v).toFixed(1)}%`).join(", ");
  return `${label}: ${(100 * t.overall).toFixed(1)}% ± ${(100 * t.overallStderr).toFixed(1)} (${t.rollouts} rollouts; ${per})`;
}

function deltaLine(d: PassDelta): string {
  // `dropped` is absent from summaries written before it existed.
  const lost = d.dropped ?? 0;
  const pairing = !d.paired ? "independent evaluations" : lost > 0 ? `paired over ${d.groups} of the same ${d.groups + lost} task × harness groups; ${lost} lost every rollout to infrastructure errors in one evaluation` : `paired over the same ${d.groups} task × harness groups`;
  const kind = d.commonRandomNumbers === true ? `${pairing}, with common random numbers` : pairing;
  return `  change: ${d.overall >= 0 ? "+" : ""}${(100 * d.overall).toFixed(1)} points ± ${(100 * d.stderr).toFixed(1)} (${d.z.toFixed(1)} standard errors, ${kind})`;
}

/** The last held-in check of `stop_at_pass_rate`, when it ran any. */
function heldIn(w: NonNullable<RunSummary["warmStart"]>): string {
  const last = w.passChecks[w.passChecks.length - 1];
  if (!last) return "";
  return `, held-in pass@1 ${(100 * last.passRate).toFixed(1)}% at step ${last.step}${w.reachedTargetPassRate ? ", stop_at_pass_rate reached" : ""}`;
}

/** Steps that ran against those planned, and where the wall time went; a time cap that cut a phase is said loudly. */
function budgetLines(s: RunSummary): string[] {
  const t = s.timing;
  const w = s.warmStart;
  const sft = w ? `, warm start ${w.steps}/${w.plannedSteps} SFT steps (NLL ${w.finalNll.toFixed(4)}${w.finalDemoProb === null ? "" : `, demo prob ${formatProbability(w.finalDemoProb)}`}${w.reachedTargetNll ? ", stop_at_nll reached" : ""}${w.reachedTargetDemoProb ? ", stop_at_demo_prob reached" : ""}${heldIn(w)})` : "";
  const lines = [`steps ${s.steps}/${s.plannedSteps}${sft}, wall ${(s.wallSeconds / 60).toFixed(1)} min`];
  const parts = w ? [`demos ${(w.demoMs / 1000).toFixed(0)}`, `SFT ${(w.sftMs / 1000).toFixed(0)}${w.passChecks.length ? ` (${(w.checkMs / 1000).toFixed(0)} of it in ${w.passChecks.length} pass-rate checks)` : ""}`] : [];
  parts.push(`eval ${(t.evalBefore + t.evalAfter).toFixed(0)}`, `rollouts ${t.rollouts.toFixed(0)}`, `train ${t.train.toFixed(0)}`, `save+swap ${t.swap.toFixed(0)}`);
  lines.push(`time (s): ${parts.join(", ")}`);
  if (w?.missedTarget) lines.push(`WARNING: the warm start ended after ${w.steps} SFT steps (${w.epochs} epochs) without reaching its stop target: RL started from a weaker policy (warm_start.max_epochs)`);
  if (w?.timeCapped) lines.push(`WARNING: warm_start.max_seconds stopped SFT after ${w.steps} of ${w.plannedSteps} steps`);
  if (s.timeCapped) lines.push(`WARNING: budget.max_minutes stopped RL after ${s.steps} of ${s.plannedSteps} steps`);
  return lines;
}

export const quickstartCommand: Command = {
  name: "quickstart",
  summary: "the main job on CPU: tiny model, oracle warm start, tree-GRPO through two built-in harnesses, before/after eval",
  usage,
  async run(argv) {
    const values = parseOptions(argv, { "run-dir": { type: "string" }, config: { type: "string" }, set: { type: "string", multiple: true }, check: { type: "boolean" } }, usage);
    const configPath = resolve(values.config ?? defaultConfig());
    const { config, text } = loadRunConfigSource(configPath, (values.set ?? []).map(parseOverride));
    if (values.check) {
      checkRunConfigNames(config, configPath);
      console.log(configCheckLine(configPath, config));
      return 0;
    }
    const runDir = resolve(values["run-dir"] ?? join("runs", config.name));
    console.error(`harnessrl quickstart → ${runDir}`);
    const s = await runTraining(buildRunContext(config, { runDir, configPath, configText: text }));
    console.log([`held-out pass@1 (${config.eval?.tasks ?? "no eval"}):`, `  ${line("warm start", s.before)}`, `  ${line("after RL  ", s.after)}`, ...(s.delta ? [deltaLine(s.delta)] : []), ...budgetLines(s), `report: ${join(runDir, "report.html")}`, `summary: ${join(runDir, "summary.json")}`].join("\n"));
    return 0;
  },
};
