import { listEngines } from "../../engine/index.js";
// The oracle is an engine kind the rollout stack serves (it knows each rollout's task); list it with the others.
import "../../rollout/oracle/register.js";
import { listHarnesses } from "../../harness/index.js";
import { MODEL_PRESETS } from "../../model/presets.js";
import { listSandboxBackends } from "../../sandbox/index.js";
import { listSuites } from "../../tasks/registry.js";
import { parseOptions } from "../args.js";
import type { Command } from "../command.js";

const usage = `Usage: harnessrl list [--json]

Shows the available harnesses, task suites, engines, model presets and sandbox backends.`;

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
  summary: "show harnesses, task suites, engines, model presets and sandbox backends",
  usage,
  async run(argv) {
    const values = parseOptions(argv, { json: { type: "boolean" } }, usage);
    const inventory = {
      harnesses: listHarnesses().map((h) => ({ name: h.name, summary: h.summary, kind: h.kind, protocol: h.protocol })),
      suites: listSuites(),
      engines: listEngines().map((e) => ({ name: e.scheme, summary: e.summary })),
      presets: MODEL_PRESETS.map((p) => ({ name: p.name, summary: `${p.modelType}, ${(p.parameters / 1e6).toFixed(2)}M parameters: ${p.description}` })),
      sandboxes: listSandboxBackends(),
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
        section("Model presets", inventory.presets),
        section("Sandbox backends", inventory.sandboxes),
      ].join("\n\n"),
    );
    return 0;
  },
};
