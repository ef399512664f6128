#!/usr/bin/env node
// scripts/gpu-check.sh's RL stage config: the quickstart's task and recipe, shrunk to 3 RL steps without warm start or
// evaluation, with the policy's worker on CUDA in bf16 autocast. Usage: node scripts/gpu-check-config.mjs <out.yaml>
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";

export function gpuCheckConfig(quickstartYaml) {
  const c = parse(quickstartYaml);
  c.name = "gpu-check";
  c.trainer = { threads: 1, device: "cuda", autocast: "bf16" };
  delete c.warm_start;
  c.budget = { steps: 3, tasks_per_step: 2, samples: 4 };
  c.eval = { ...c.eval, before: false, after: false };
  return c;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  if (!out) {
    console.error("usage: node scripts/gpu-check-config.mjs <out.yaml>");
    process.exit(2);
  }
  const root = join(dirname(fileURLToPath(import.meta.url)), "..");
  writeFileSync(out, stringify(gpuCheckConfig(readFileSync(join(root, "configs", "quickstart.yaml"), "utf8"))));
}
