import { listEngines } from "../../engine/index.js";
import { listHarnesses } from "../../harness/index.js";
import { MODEL_PRESETS } from "../../model/presets.js";
import { listSandboxBackends } from "../../sandbox/index.js";
import { listSchedulers } from "../../schedule/index.js";
import { listStores } from "../../store/registry.js";
import { listSuites } from "../../tasks/registry.js";
import { listTrainers } from "../../trainer/index.js";
import { parseOptions } from "../args.js";
import type { Command } from "../command.js";

const usage = `Usage: harnessrl list [--json]

Shows everything a config or command line can name: harnesses, task suites, engines, stores, sandbox backends,
trainers, harness schedulers and model presets.`;

interface Row {
  name: string;
  summary: string;
}

function section(title: string, rows: Row[]): string {
  const width = Math.max(...rows.map((r) => r.name.length), 4);
  return [`${title}:`, ...rows.map((r) => `  ${r.name.padEnd(width)}  ${r.summary}`)].join("\n");
}

export const listCommand: Command = {
  name: "list",
  summary: "show harnesses, task suites, engines, stores, sandboxes, trainers, schedulers and model presets",
  usage,
  async run(argv) {
    const values = parseOptions(argv, { json: { type: "boolean" } }, usage);
    const inventory = {
      harnesses: listHarnesses().map((h) => ({ name: h.name, summary: h.summary, kind: h.kind, protocol: h.protocol })),
      suites: listSuites(),
      engines: listEngines(),
      stores: listStores(),
      sandboxes: listSandboxBackends(),
      trainers: listTrainers(),
      schedulers: listSchedulers(),
      presets: MODEL_PRESETS.map((p) => ({ name: p.name, summary: `${p.modelType}, ${(p.parameters / 1e6).toFixed(2)}M parameters: ${p.description}` })),
    };
    if (values.json) {
      console.log(JSON.stringify(inventory, null, 2));
      return 0;
    }
    console.log(
      [
        section("Harnesses", inventory.harnesses.map((h) => ({ name: h.name, summary: `[${h.kind}, ${h.protocol}] ${h.summary}` }))),
        section("Task suites", inventory.suites),
        section("Engines", inventory.engines),
        section("Stores", inventory.stores),
        section("Sandbox backends", inventory.sandboxes),
        section("Trainers", inventory.trainers),
        section("Harness schedulers", inventory.schedulers),
        section("Model presets", inventory.presets),
      ].join("\n\n"),
    );
    return 0;
  },
};
