import { parseArgs } from "node:util";
import type { Command } from "../command.js";
import { errorMessage, UserError } from "../../core/errors.js";
import { checkTasks } from "../../tasks/check.js";
import { writeNativeSuite } from "../../tasks/layout-native.js";
import { listSuites, loadSuite } from "../../tasks/registry.js";

const usage = `Usage:
  harnessrl tasks list [--json]
  harnessrl tasks show <suite-spec> [--limit N] [--json]
  harnessrl tasks export <suite-spec> --out DIR
  harnessrl tasks check <suite-spec> [--limit N] [--json]

Suite specs: <suite>[:train|:test][?n=<count>&seed=<int>], e.g. arith:test, lookup:train?n=200&seed=3, mix,
dir:/path/to/suite (native task.json layout or ClawGym-Bench data_entry.json layout). See docs/tasks.md.

  list     the registered suites
  show     the tasks of a suite: id, split, template, prompt (--json: whole tasks)
  export   write a suite in the native layout (one folder per task)
  check    run each task's oracle steps and its verifier as local processes, WITHOUT a sandbox (trusted suites only):
           the oracle should score 1, doing nothing 0`;

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, strict: true, allowPositionals: true, options: { json: { type: "boolean" }, limit: { type: "string" }, out: { type: "string" } } });
  } catch (e) {
    throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
  }
  const { values, positionals } = parsed;
  const [sub, spec, ...extra] = positionals;
  if (extra.length) throw new UserError("invalid_arguments", `unexpected arguments: ${extra.join(" ")}\n\n${usage}`);
  const limit = values.limit === undefined ? Infinity : Number(values.limit);
  if (!(limit >= 1)) throw new UserError("invalid_arguments", `--limit must be a positive number, got ${values.limit}`);

  if (sub === "list") {
    const suites = listSuites();
    console.log(values.json ? JSON.stringify(suites, null, 2) : suites.map((s) => `${s.name.padEnd(8)} ${s.summary}`).join("\n"));
    return 0;
  }
  if (!spec || !["show", "export", "check"].includes(sub ?? "")) throw new UserError("invalid_arguments", usage);
  const tasks = (await loadSuite(spec)).tasks.slice(0, limit);

  if (sub === "show") {
    if (values.json) console.log(JSON.stringify(tasks, null, 2));
    else for (const t of tasks) console.log(`${t.id}\t${t.split}\t${t.metadata.template ?? "-"}\t${t.prompt}`);
    return 0;
  }
  if (sub === "export") {
    if (!values.out) throw new UserError("invalid_arguments", `export needs --out DIR\n\n${usage}`);
    await writeNativeSuite(tasks, values.out);
    console.log(`wrote ${tasks.length} tasks to ${values.out}`);
    return 0;
  }
  let done = 0;
  const checks = await checkTasks(tasks, 2, () => {
    done++;
    if (!values.json && process.stderr.isTTY) process.stderr.write(`\rchecked ${done}/${tasks.length}`);
  });
  if (!values.json && process.stderr.isTTY) process.stderr.write("\n");
  const withOracle = checks.filter((c) => c.oracle);
  const summary = {
    tasks: checks.length,
    oracleMean: withOracle.length ? mean(withOracle.map((c) => c.oracle!.score)) : null,
    emptyMean: mean(checks.map((c) => c.empty.score)),
    problems: checks.filter((c) => (c.oracle && (c.oracle.score < 1 || c.oracle.failedSteps > 0)) || c.empty.score > 0),
  };
  if (values.json) console.log(JSON.stringify({ ...summary, checks }, null, 2));
  else {
    console.log(`${summary.tasks} tasks; oracle mean ${summary.oracleMean === null ? "n/a (no oracle)" : summary.oracleMean.toFixed(3)}; do-nothing mean ${summary.emptyMean.toFixed(3)}`);
    for (const p of summary.problems) console.log(`  ${p.id}: oracle ${p.oracle ? `${p.oracle.score} (${p.oracle.failedSteps} failed steps) ${p.oracle.error ?? ""}` : "-"}; empty ${p.empty.score}`);
  }
  return summary.problems.length === 0 ? 0 : 1;
}

export const tasksCommand: Command = {
  name: "tasks",
  summary: "list, show, export and check task suites (built-in families, native folders, ClawGym-Bench)",
  usage,
  run,
};
