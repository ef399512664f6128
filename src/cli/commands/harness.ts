import { parseArgs } from "node:util";
import { UserError, errorMessage } from "../../core/errors.js";
import { getHarness, listHarnesses } from "../../harness/index.js";
import type { Command } from "../command.js";

const usage = `Usage: harnessrl harness install [names…] [--json]
       harnessrl harness list [--json]

install  Installs the real harness CLIs (pinned npm packages, each in its own prefix under .cache/harnesses or
         $HARNESSRL_HARNESS_CACHE; OpenClaw also gets its Node 24 runtime). Idempotent; without names, all of them.
list     Shows every harness with its kind, protocol and host paths.`;

export const harnessCommand: Command = {
  name: "harness",
  summary: "install the real harness CLIs (pinned npm packages) or list harnesses",
  usage,
  async run(argv) {
    let parsed;
    try {
      parsed = parseArgs({ args: argv, options: { json: { type: "boolean" } }, strict: true, allowPositionals: true });
    } catch (e) {
      throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
    }
    const [action, ...names] = parsed.positionals;
    const json = parsed.values.json === true;
    if (action === "list") {
      const rows = listHarnesses().map((h) => ({ name: h.name, kind: h.kind, protocol: h.protocol, summary: h.summary, hostPaths: h.hostPaths() }));
      if (json) console.log(JSON.stringify(rows));
      else for (const r of rows) console.log(`${r.name.padEnd(14)} [${r.kind}, ${r.protocol}] ${r.summary}`);
      return 0;
    }
    if (action !== "install") throw new UserError("invalid_arguments", `unknown action "${action ?? ""}"\n\n${usage}`);
    const defs = names.length > 0 ? names.map((n) => getHarness(n)) : listHarnesses().filter((h) => h.kind === "real");
    const results: { name: string; ok: boolean; ms: number; hostPaths: string[]; error?: string }[] = [];
    // One at a time: each install is a large npm download and the machine is shared.
    for (const def of defs) {
      const started = Date.now();
      try {
        await def.ensureInstalled();
        results.push({ name: def.name, ok: true, ms: Date.now() - started, hostPaths: def.hostPaths() });
      } catch (e) {
        results.push({ name: def.name, ok: false, ms: Date.now() - started, hostPaths: [], error: errorMessage(e) });
      }
    }
    if (json) console.log(JSON.stringify(results));
    else for (const r of results) console.log(r.ok ? `ok      ${r.name} (${(r.ms / 1000).toFixed(1)} s) ${r.hostPaths.join(" ")}` : `FAILED  ${r.name}: ${r.error}`);
    return results.every((r) => r.ok) ? 0 : 1;
  },
};
