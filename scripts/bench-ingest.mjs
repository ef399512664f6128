#!/usr/bin/env node
// npm run bench:ingest: starts a throwaway Postgres (local-postgres.mjs), runs dist/bench/ingest.js against it and
// SQLite, stops the server.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startLocalPostgres } from "./local-postgres.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const server = await startLocalPostgres();
try {
  const r = spawnSync(process.execPath, [join(root, "dist", "bench", "ingest.js")], { stdio: "inherit", env: { HARNESSRL_BENCH_NOTE: "shared 2-core dev machine; Postgres 15 local, fsync=off (local-postgres.mjs default)", ...process.env, HARNESSRL_BENCH_PG_URL: server.url } });
  process.exitCode = r.status ?? 1;
} finally {
  await server.stop();
}
