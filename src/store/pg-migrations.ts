import { UserError } from "../core/errors.js";
import type { Migration } from "./migrations.js";
import type { SyncPgClient } from "./pg-client.js";

/**
 * Ordered schema migrations of the Postgres store, versioned like the SQLite store's (migrations.ts): never edit a
 * released one, append. The layout is SQLite's schema 5 (call-row.ts): token ids and logprobs as little-endian
 * Int32/Float32 `bytea` (4 bytes a token, TOAST-compressed when large), prompts and texts as deltas of the call they
 * extend. Ids sort bytewise (`COLLATE "C"`) as in SQLite, whatever the server's locale. Ingested sessions have a
 * NULL credential hash: nothing authenticates as them.
 */
export const PG_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "sessions, call records and landed rollouts (SQLite schema 5's layout)",
    sql: `
      CREATE TABLE sessions (
        session_id TEXT COLLATE "C" PRIMARY KEY,
        credential_hash TEXT UNIQUE,
        rollout_id TEXT COLLATE "C",
        harness TEXT,
        agent_role TEXT,
        parent_session_id TEXT,
        spawned_by_call_id TEXT,
        created_at BIGINT NOT NULL,
        metadata_json TEXT NOT NULL
      );
      CREATE INDEX sessions_by_rollout ON sessions (rollout_id, created_at, session_id);
      CREATE INDEX sessions_by_time ON sessions (created_at, session_id);

      CREATE TABLE calls (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        call_id TEXT COLLATE "C" NOT NULL UNIQUE,
        session_id TEXT COLLATE "C" NOT NULL,
        rollout_id TEXT COLLATE "C",
        record_version INTEGER NOT NULL,
        harness TEXT,
        agent_role TEXT,
        agent_id TEXT,
        protocol TEXT NOT NULL,
        stream SMALLINT NOT NULL,
        status TEXT NOT NULL,
        finish_reason TEXT,
        policy_version INTEGER,
        parent_call_id TEXT COLLATE "C",
        reused_prefix_tokens INTEGER NOT NULL,
        break_kind TEXT,
        spawned_by_call_id TEXT,
        received_at BIGINT NOT NULL,
        recorded_at BIGINT NOT NULL,
        prompt_len INTEGER NOT NULL,
        completion_len INTEGER NOT NULL,
        prompt_tokens BYTEA NOT NULL,
        completion_tokens BYTEA NOT NULL,
        logprobs BYTEA NOT NULL,
        messages_json TEXT NOT NULL,
        tools_json TEXT NOT NULL,
        response_json TEXT,
        raw_request_json TEXT,
        raw_response_json TEXT,
        meta_json TEXT NOT NULL,
        prompt_base_call_id TEXT COLLATE "C",
        prompt_base_len INTEGER NOT NULL DEFAULT 0,
        text_base_call_id TEXT COLLATE "C",
        messages_keep INTEGER NOT NULL DEFAULT 0,
        messages_tail INTEGER NOT NULL DEFAULT 0,
        raw_request_keep INTEGER NOT NULL DEFAULT 0,
        raw_request_tail INTEGER NOT NULL DEFAULT 0,
        tools_keep INTEGER NOT NULL DEFAULT 0,
        tools_tail INTEGER NOT NULL DEFAULT 0,
        spans_json TEXT
      );
      CREATE INDEX calls_by_session ON calls (session_id, seq);
      CREATE INDEX calls_by_rollout ON calls (rollout_id, seq);

      CREATE TABLE rollouts (
        rollout_id TEXT COLLATE "C" PRIMARY KEY,
        attempt INTEGER NOT NULL,
        node_id TEXT NOT NULL,
        result_json TEXT NOT NULL,
        landed_at BIGINT NOT NULL UNIQUE,
        session_count INTEGER NOT NULL,
        call_count INTEGER NOT NULL
      );
    `,
  },
];

export const PG_LATEST_SCHEMA_VERSION = PG_MIGRATIONS.reduce((m, x) => Math.max(m, x.version), 0);

/**
 * Advisory lock keys (the two-int form: this key and the current schema's hash, so runs in other schemas of the same
 * database do not wait for each other). WRITE serialises the transactions that add calls or land rollouts, so `seq`
 * and `landed_at` grow in commit order and incremental readers (`afterSeq`, `afterLandedAt`) never skip a row that
 * commits late.
 */
export const PG_LOCK_MIGRATE = 72_100;
export const PG_LOCK_WRITE = 72_101;

export const lockSql = (key: number): string => `SELECT pg_advisory_xact_lock(${key}, hashtext(current_schema()))`;

/** Brings the schema to the latest version in one transaction; refuses schemas written by a newer harnessrl. */
export function migratePostgres(db: SyncPgClient, where: string, migrations: readonly Migration[] = PG_MIGRATIONS): number {
  const latest = migrations.reduce((m, x) => Math.max(m, x.version), 0);
  return db.transaction(
    [
      { sql: lockSql(PG_LOCK_MIGRATE) },
      { sql: "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at BIGINT NOT NULL)" },
      { sql: "SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations" },
    ],
    (rows, run) => {
      const current = Number((rows[2]?.[0] as { v: number } | undefined)?.v ?? 0);
      if (current > latest) {
        throw new UserError("store_schema_too_new", `the Postgres store ${where} has schema version ${current}, but this harnessrl only knows up to version ${latest}; upgrade harnessrl or use another database or schema`, {
          details: { where, current, latest },
        });
      }
      const pending = [...migrations].sort((a, b) => a.version - b.version).filter((m) => m.version > current);
      run(
        "commit",
        pending.flatMap((m) => [{ sql: m.sql }, { sql: "INSERT INTO schema_migrations (version, description, applied_at) VALUES ($1, $2, $3)", params: [m.version, m.description, Date.now()] }]),
      );
      return latest;
    },
  );
}
