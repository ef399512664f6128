import { parseArgs } from "node:util";
import { UserError, errorMessage } from "../../core/errors.js";
import { exportStore } from "../../export/export.js";
import { openRecordedStore } from "../../export/open-store.js";
import type { Command } from "../command.js";

const usage = `Usage:
  harnessrl export --db FILE --out DIR [--rollout ID] [--json]

Writes the recorded calls and their reconstructed prefix trees as Parquet files readable by pyarrow, pandas, polars
and duckdb (token ids and logprobs as list columns), plus manifest.json with the schema version and columns:
  calls.parquet       one row per call record
  sessions.parquet    one row per session
  tree_nodes.parquet  radix nodes: token run, parent node, depth, role (sampled / prompt / tool_output / user / harness)
  tree_calls.parquet  each call's verified parent, segment, label and inserted context span

Options:
  --db FILE      call record store: a .sqlite path, sqlite:<path>, a run directory (its records.sqlite), or a
                 Postgres URL (postgres://user:password@host:port/db[?schema=NAME])
  --out DIR      output directory (created; existing files of the same names are replaced)
  --rollout ID   only this rollout
  --json         print the manifest as JSON`;

async function run(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, strict: true, options: { db: { type: "string" }, out: { type: "string" }, rollout: { type: "string" }, json: { type: "boolean" } } }));
  } catch (e) {
    throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
  }
  if (!values.db || !values.out) throw new UserError("invalid_arguments", `export needs --db and --out\n\n${usage}`);
  const store = openRecordedStore(values.db);
  try {
    const manifest = exportStore(store, values.out, values.rollout === undefined ? {} : { rolloutId: values.rollout });
    if (values.json === true) console.log(JSON.stringify(manifest, null, 2));
    else for (const f of manifest.files) console.log(`${f.file.padEnd(20)} ${String(f.rows).padStart(8)} rows`);
    return 0;
  } finally {
    store.close();
  }
}

export const exportCommand: Command = { name: "export", summary: "export call records and trees as Parquet", usage, run };
