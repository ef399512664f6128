import { UserError } from "../core/errors.js";
import type { Registry } from "../core/registry.js";
import { engines } from "../engine/registry.js";
import { harnesses } from "../harness/registry.js";
import { MODEL_PRESETS, findPreset } from "../model/presets.js";
import { sandboxBackends } from "../sandbox/registry.js";
import { suites } from "../tasks/registry.js";
import { parseSuiteSpec } from "../tasks/suite-spec.js";
import { trainers } from "../trainer/registry.js";
import type { RunConfig } from "../train/config.js";

/**
 * The names a run config refers to (harnesses, task suites, sandbox backend, trainer, engine kind), looked up in the
 * registries: the schema checks a config's shape, this checks that what it names exists, so a typo in a harness name
 * fails in a second with its path instead of after the warm start. Needs the registries filled (registerBuiltins()).
 */
export function checkRunConfigNames(config: RunConfig, source = "config"): void {
  const problems: string[] = [];
  const need = <T extends { name: string; summary: string }>(registry: Registry<T>, name: string, path: string): void => {
    if (!registry.has(name)) problems.push(`  ${path}: unknown ${registry.kind} "${name}" (${registry.knownText()})`);
  };
  const suite = (spec: string, path: string): void => {
    let name: string;
    try {
      name = parseSuiteSpec(spec).name;
    } catch (e) {
      problems.push(`  ${path}: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    need(suites, name, path);
  };
  config.harnesses.forEach((h, i) => need(harnesses, h, `harnesses.${i}`));
  config.eval?.harnesses?.forEach((h, i) => need(harnesses, h, `eval.harnesses.${i}`));
  if (config.scheduler?.name === "harness-bandit") config.scheduler.probe_harnesses.forEach((h, i) => need(harnesses, h, `scheduler.probe_harnesses.${i}`));
  suite(config.tasks.train, "tasks.train");
  if (config.warm_start) suite(config.warm_start.demos, "warm_start.demos");
  if (config.eval) suite(config.eval.tasks, "eval.tasks");
  need(sandboxBackends, config.rollout.sandbox, "rollout.sandbox");
  if ("preset" in config.model && !findPreset(config.model.preset)) {
    problems.push(`  model.preset: unknown model preset "${config.model.preset}" (known: ${MODEL_PRESETS.map((p) => p.name).join(", ")})`);
  }
  need(trainers, config.trainer.kind, "trainer.kind");
  need(engines, config.engine.kind, "engine.kind");
  if (problems.length > 0) throw new UserError("invalid_config", `${source} names things that do not exist:\n${problems.join("\n")}`);
}
