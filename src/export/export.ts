import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Store } from "../store/types.js";
import { buildForests } from "../trees/forest.js";
import type { TableDef } from "./parquet-table.js";
import { writeTable } from "./parquet-table.js";
import type { NodeRow, TreeCallRow } from "./schema.js";
import { CALLS_TABLE, EXPORT_SCHEMA_VERSION, SESSIONS_TABLE, TREE_CALLS_TABLE, TREE_NODES_TABLE } from "./schema.js";

export interface ExportedFile {
  table: string;
  file: string;
  rows: number;
  description: string;
  columns: { name: string; type: string; nullable: boolean }[];
}

export interface ExportManifest {
  format: "harnessrl-export";
  version: number;
  createdAt: string;
  filter: { rolloutId?: string };
  files: ExportedFile[];
}

function describe<R>(def: TableDef<R>, file: string, rows: number): ExportedFile {
  return { table: def.name, file, rows, description: def.description, columns: def.columns.map((c) => ({ name: c.name, type: c.type, nullable: c.nullable === true })) };
}

/**
 * Exports the store's records and their reconstructed trees as Parquet files (`calls`, `sessions`, `tree_nodes`,
 * `tree_calls`) plus `manifest.json` describing the schema. Everything is built in memory: fine for runs up to a few
 * hundred thousand calls; larger stores should be exported per rollout.
 */
export function exportStore(store: Store, outDir: string, filter: { rolloutId?: string } = {}): ExportManifest {
  const dir = resolve(outDir);
  mkdirSync(dir, { recursive: true });
  const records = store.listCalls(filter.rolloutId === undefined ? {} : { rolloutId: filter.rolloutId });
  const sessions = store.listSessions(filter.rolloutId === undefined ? {} : { rolloutId: filter.rolloutId });
  const forests = buildForests(records, sessions);
  const nodes: NodeRow[] = [];
  const calls: TreeCallRow[] = [];
  for (const f of forests) {
    for (const tree of f.trees) {
      for (const node of tree.nodes) if (node.id !== 0) nodes.push({ rolloutKey: f.rolloutId, tree, node });
      for (const call of tree.calls) calls.push({ rolloutKey: f.rolloutId, tree, call });
    }
  }
  const meta = (table: string): Record<string, string> => ({ "harnessrl.export_version": String(EXPORT_SCHEMA_VERSION), "harnessrl.table": table });
  const files: ExportedFile[] = [];
  const write = <R>(def: TableDef<R>, rows: readonly R[]): void => {
    const file = `${def.name}.parquet`;
    writeTable(def, rows, join(dir, file), meta(def.name));
    files.push(describe(def, file, rows.length));
  };
  write(CALLS_TABLE, records);
  write(SESSIONS_TABLE, sessions);
  write(TREE_NODES_TABLE, nodes);
  write(TREE_CALLS_TABLE, calls);
  const manifest: ExportManifest = { format: "harnessrl-export", version: EXPORT_SCHEMA_VERSION, createdAt: new Date().toISOString(), filter, files };
  const tmp = join(dir, `manifest.json.tmp-${process.pid}`);
  writeFileSync(tmp, JSON.stringify(manifest, null, 2) + "\n");
  renameSync(tmp, join(dir, "manifest.json"));
  return manifest;
}
