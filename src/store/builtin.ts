import { UserError } from "../core/errors.js";
import { MemoryStore } from "./memory.js";
import { PostgresStore } from "./postgres.js";
import type { StoreAdapter } from "./registry.js";
import { SqliteStore } from "./sqlite.js";

const memoryStore: StoreAdapter = {
  name: "memory",
  summary: "in-process maps; lost when the process exits",
  open: (arg) => {
    if (arg !== "") throw new UserError("invalid_store_spec", `the memory store takes no argument (got "memory:${arg}")`);
    return new MemoryStore();
  },
};

const sqliteStore: StoreAdapter = {
  name: "sqlite",
  summary: "SQLite file (WAL), the durable default: sqlite:<path> (or a bare <path>.sqlite)",
  open: (arg) => {
    if (arg === "") throw new UserError("invalid_store_spec", "sqlite: needs a file path, e.g. sqlite:runs/calls.sqlite");
    return new SqliteStore(arg);
  },
};

/** `postgres://…` and `postgresql://…`: the spec's `arg` is what follows the scheme's colon. */
const postgresStore = (name: "postgres" | "postgresql"): StoreAdapter => ({
  name,
  summary: `Postgres, the run's central record store that rollout nodes ship into: ${name}://user:password@host:port/database[?schema=<name>]`,
  open: (arg) => {
    if (!arg.startsWith("//")) throw new UserError("invalid_store_spec", `${name}: needs a URL, e.g. ${name}://harnessrl:secret@127.0.0.1:5432/runs`);
    return new PostgresStore(`${name}:${arg}`);
  },
});

/** The built-in store adapters (registered by src/builtins.ts). */
export const builtinStores: readonly StoreAdapter[] = [memoryStore, sqliteStore, postgresStore("postgres"), postgresStore("postgresql")];
