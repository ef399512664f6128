import { UserError } from "../core/errors.js";
import { MemoryStore } from "./memory.js";
import { SqliteStore } from "./sqlite.js";
import type { Store } from "./types.js";

/** Creates a store from the part of the spec after `scheme:`. */
export type StoreFactory = (arg: string) => Store;

const factories = new Map<string, { factory: StoreFactory; summary: string }>();

/** Adapters register by scheme; `openStore("<scheme>:<arg>")` finds them. */
export function registerStore(scheme: string, summary: string, factory: StoreFactory): void {
  factories.set(scheme, { factory, summary });
}

export function listStores(): { scheme: string; summary: string }[] {
  return [...factories.entries()].map(([scheme, e]) => ({ scheme, summary: e.summary }));
}

const SQLITE_FILE = /\.(sqlite|sqlite3|db)$/i;

/**
 * Opens a store by spec: `memory`, `sqlite:<path>`, or a bare path ending in `.sqlite`, `.sqlite3` or `.db`.
 * Other `scheme:arg` specs go to registered adapters.
 */
export function openStore(spec: string): Store {
  const trimmed = spec.trim();
  if (trimmed === "") throw new UserError("invalid_store_spec", "the store spec is empty (use memory, sqlite:<path> or <path>.sqlite)");
  const i = trimmed.indexOf(":");
  const scheme = i < 0 ? trimmed : trimmed.slice(0, i);
  const entry = factories.get(scheme);
  if (entry) return entry.factory(i < 0 ? "" : trimmed.slice(i + 1));
  if (SQLITE_FILE.test(trimmed)) return new SqliteStore(trimmed);
  const known = [...factories.keys()].sort().join(", ");
  throw new UserError("unknown_store", `unknown store "${spec}" (use a path ending in .sqlite/.db, or one of: ${known})`);
}

registerStore("memory", "in-process maps; lost when the process exits", (arg) => {
  if (arg !== "") throw new UserError("invalid_store_spec", `the memory store takes no argument (got "memory:${arg}")`);
  return new MemoryStore();
});
registerStore("sqlite", "SQLite file (WAL), the durable default: sqlite:<path>", (arg) => {
  if (arg === "") throw new UserError("invalid_store_spec", "sqlite: needs a file path, e.g. sqlite:runs/calls.sqlite");
  return new SqliteStore(arg);
});
