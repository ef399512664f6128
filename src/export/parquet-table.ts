import { renameSync, writeFileSync } from "node:fs";
import { parquetWriteBuffer } from "hyparquet-writer";
import type { ColumnSource, SchemaElement } from "hyparquet-writer";
import { InfraError } from "../core/errors.js";

/** Column types of the export schema; lists are Parquet 3-level LIST columns (read as arrays by pyarrow and duckdb). */
export type ColumnType = "string" | "json" | "int32" | "int64" | "float" | "double" | "boolean" | "list<int32>" | "list<float>" | "list<string>";

export type CellValue = string | number | boolean | null | readonly number[] | readonly string[];

export interface ColumnDef<R> {
  name: string;
  type: ColumnType;
  /** Nullable scalars are OPTIONAL; lists are never null (an empty list instead). */
  nullable?: boolean;
  get(row: R): CellValue;
}

export interface TableDef<R> {
  name: string;
  description: string;
  columns: ColumnDef<R>[];
}

function leaf(name: string, type: ColumnType, repetition: "REQUIRED" | "OPTIONAL"): SchemaElement {
  switch (type) {
    case "string":
      return { name, type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: repetition };
    case "json":
      return { name, type: "BYTE_ARRAY", converted_type: "JSON", repetition_type: repetition };
    case "int32":
      return { name, type: "INT32", repetition_type: repetition };
    case "int64":
      return { name, type: "INT64", repetition_type: repetition };
    case "float":
      return { name, type: "FLOAT", repetition_type: repetition };
    case "double":
      return { name, type: "DOUBLE", repetition_type: repetition };
    case "boolean":
      return { name, type: "BOOLEAN", repetition_type: repetition };
    default:
      throw new InfraError("internal", `not a scalar type: ${type}`);
  }
}

function schemaOf<R>(def: TableDef<R>): SchemaElement[] {
  const out: SchemaElement[] = [{ name: "root", num_children: def.columns.length }];
  for (const c of def.columns) {
    if (c.type.startsWith("list<")) {
      const inner = c.type.slice(5, -1) as ColumnType;
      out.push({ name: c.name, repetition_type: "REQUIRED", converted_type: "LIST", num_children: 1 });
      out.push({ name: "list", repetition_type: "REPEATED", num_children: 1 });
      out.push(leaf("element", inner, "REQUIRED"));
    } else out.push(leaf(c.name, c.type, c.nullable ? "OPTIONAL" : "REQUIRED"));
  }
  return out;
}

function cell(c: ColumnDef<unknown>, v: CellValue): unknown {
  if (v === null) {
    if (c.type.startsWith("list<")) return [];
    if (!c.nullable) throw new InfraError("internal", `column ${c.name} is not nullable`);
    return null;
  }
  if (c.type === "int64") return BigInt(Math.trunc(v as number));
  if (Array.isArray(v)) return Array.from(v as readonly unknown[]);
  return v;
}

/** Encodes rows as one Parquet file (Snappy, one row group per 100k rows) with key-value metadata. */
export function encodeTable<R>(def: TableDef<R>, rows: readonly R[], metadata: Record<string, string>): ArrayBuffer {
  const columnData: ColumnSource[] = def.columns.map((c) => ({ name: c.name, data: rows.map((r) => cell(c as ColumnDef<unknown>, c.get(r))) as ColumnSource["data"] }));
  return parquetWriteBuffer({
    columnData,
    schema: schemaOf(def),
    rowGroupSize: 100_000,
    kvMetadata: Object.entries(metadata).map(([key, value]) => ({ key, value })),
    createdBy: "harnessrl",
  });
}

/** Writes the table next to its final path and renames it into place, so readers never see a partial file. */
export function writeTable<R>(def: TableDef<R>, rows: readonly R[], path: string, metadata: Record<string, string>): void {
  const buf = encodeTable(def, rows, metadata);
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, new Uint8Array(buf));
  renameSync(tmp, path);
}
