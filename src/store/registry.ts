import { rmSync } from "node:fs";
import { UserError } from "../core/errors.js";
import { parseSpec, Registry } from "../core/registry.js";
import { SqliteStore } from "./sqlite.js";
import type { Store } from "./types.js";

/** Creates a store from the part of the spec after `scheme:`. */
export type StoreFactory = (arg: string) => Store;

/** A store adapter as registered: `name` is the spec's scheme (`memory`, `sqlite`, …). */
export interface StoreAdapter {
  name: string;
  summary: string;
  open: StoreFactory;
}

/** The store adapters; filled by registerBuiltins() (src/builtins.ts) and library users. */
export const stores = new Registry<StoreAdapter>("store", "unknown_store");

/** `openStore("<scheme>:<arg>")` finds adapters registered here. */
export function registerStore(adapter: StoreAdapter): void {
  stores.register(adapter);
}

export function listStores(): { name: string; summary: string }[] {
  return stores.list();
}

const SQLITE_FILE = /\.(sqlite|sqlite3|db)$/i;

/** The SQLite file a store spec names (`sqlite:<path>`, or a bare path ending in .sqlite/.sqlite3/.db), else null. */
export function sqliteFileOf(spec: string): string | null {
  const trimmed = spec.trim();
  const { scheme, arg } = parseSpec(trimmed);
  if (scheme === "sqlite") return arg === "" ? null : arg;
  if (stores.has(scheme)) return null;
  return SQLITE_FILE.test(trimmed) ? trimmed : null;
}

/** Deletes a SQLite store's database file and its write-ahead log, shared-memory and journal files (none open). */
export function removeSqliteFiles(file: string): void {
  for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(`${file}${suffix}`, { force: true });
}

/**
 * Opens a store by spec: `memory`, `sqlite:<path>`, or a bare path ending in `.sqlite`, `.sqlite3` or `.db`.
 * Other `scheme:arg` specs go to registered adapters.
 */
export function openStore(spec: string): Store {
  const trimmed = spec.trim();
  if (trimmed === "") throw new UserError("invalid_store_spec", "the store spec is empty (use memory, sqlite:<path> or <path>.sqlite)");
  const { scheme, arg } = parseSpec(trimmed);
  const adapter = stores.find(scheme);
  if (adapter) return adapter.open(arg);
  // A bare file path is the sqlite store, even without registered adapters: it is the durable default.
  const file = sqliteFileOf(trimmed);
  if (file !== null) return new SqliteStore(file);
  throw new UserError("unknown_store", `unknown store "${spec}" (use a path ending in .sqlite/.db, or a registered scheme; ${stores.knownText()})`);
}
