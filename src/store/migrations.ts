import type Database from "better-sqlite3";
import { UserError } from "../core/errors.js";

/**
 * Ordered schema migrations of the SQLite store. Never edit a released migration: append a new one. Each runs in a
 * transaction together with its row in `schema_migrations`, so a crash leaves the database at a whole version.
 */
export interface Migration {
  version: number;
  description: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "sessions and call records",
    sql: `
      CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        credential_hash TEXT NOT NULL UNIQUE,
        rollout_id TEXT,
        harness TEXT,
        agent_role TEXT,
        parent_session_id TEXT,
        spawned_by_call_id TEXT,
        created_at INTEGER NOT NULL,
        metadata_json TEXT NOT NULL
      );
      CREATE INDEX sessions_by_rollout ON sessions(rollout_id);

      CREATE TABLE calls (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        call_id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL,
        rollout_id TEXT,
        record_version INTEGER NOT NULL,
        harness TEXT,
        agent_role TEXT,
        agent_id TEXT,
        protocol TEXT NOT NULL,
        stream INTEGER NOT NULL,
        status TEXT NOT NULL,
        finish_reason TEXT,
        policy_version INTEGER,
        parent_call_id TEXT,
        reused_prefix_tokens INTEGER NOT NULL,
        break_kind TEXT,
        spawned_by_call_id TEXT,
        received_at INTEGER NOT NULL,
        recorded_at INTEGER NOT NULL,
        prompt_len INTEGER NOT NULL,
        completion_len INTEGER NOT NULL,
        prompt_tokens BLOB NOT NULL,
        completion_tokens BLOB NOT NULL,
        logprobs BLOB NOT NULL,
        messages_json TEXT NOT NULL,
        tools_json TEXT NOT NULL,
        response_json TEXT,
        raw_request_json TEXT,
        raw_response_json TEXT,
        meta_json TEXT NOT NULL
      );
      CREATE INDEX calls_by_session ON calls(session_id, seq);
      CREATE INDEX calls_by_rollout ON calls(rollout_id, seq);
      CREATE INDEX calls_by_parent ON calls(parent_call_id);
    `,
  },
  {
    version: 2,
    description: "prompt tokens stored as a delta against the call they extend (src/store/prompt-delta.ts)",
    sql: `
      ALTER TABLE calls ADD COLUMN prompt_base_call_id TEXT;
      ALTER TABLE calls ADD COLUMN prompt_base_len INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 3,
    description: "messages, tools and raw request stored as text deltas (src/store/text-delta.ts); fewer pages per insert (no AUTOINCREMENT, no unused parent index)",
    // SQLite cannot drop AUTOINCREMENT in place: the table is rebuilt once. seq values are kept; new rows continue
    // after the largest (calls are never deleted, so rowid order is insertion order as before).
    sql: `
      CREATE TABLE calls_v3 (
        seq INTEGER PRIMARY KEY,
        call_id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL,
        rollout_id TEXT,
        record_version INTEGER NOT NULL,
        harness TEXT,
        agent_role TEXT,
        agent_id TEXT,
        protocol TEXT NOT NULL,
        stream INTEGER NOT NULL,
        status TEXT NOT NULL,
        finish_reason TEXT,
        policy_version INTEGER,
        parent_call_id TEXT,
        reused_prefix_tokens INTEGER NOT NULL,
        break_kind TEXT,
        spawned_by_call_id TEXT,
        received_at INTEGER NOT NULL,
        recorded_at INTEGER NOT NULL,
        prompt_len INTEGER NOT NULL,
        completion_len INTEGER NOT NULL,
        prompt_tokens BLOB NOT NULL,
        completion_tokens BLOB NOT NULL,
        logprobs BLOB NOT NULL,
        messages_json TEXT NOT NULL,
        tools_json TEXT NOT NULL,
        response_json TEXT,
        raw_request_json TEXT,
        raw_response_json TEXT,
        meta_json TEXT NOT NULL,
        prompt_base_call_id TEXT,
        prompt_base_len INTEGER NOT NULL DEFAULT 0,
        text_base_call_id TEXT,
        messages_keep INTEGER NOT NULL DEFAULT 0,
        messages_tail INTEGER NOT NULL DEFAULT 0,
        raw_request_keep INTEGER NOT NULL DEFAULT 0,
        raw_request_tail INTEGER NOT NULL DEFAULT 0,
        tools_keep INTEGER NOT NULL DEFAULT 0,
        tools_tail INTEGER NOT NULL DEFAULT 0
      );
      INSERT INTO calls_v3 (seq, call_id, session_id, rollout_id, record_version, harness, agent_role, agent_id, protocol, stream, status, finish_reason, policy_version, parent_call_id, reused_prefix_tokens, break_kind, spawned_by_call_id, received_at, recorded_at, prompt_len, completion_len, prompt_tokens, completion_tokens, logprobs, messages_json, tools_json, response_json, raw_request_json, raw_response_json, meta_json, prompt_base_call_id, prompt_base_len) SELECT seq, call_id, session_id, rollout_id, record_version, harness, agent_role, agent_id, protocol, stream, status, finish_reason, policy_version, parent_call_id, reused_prefix_tokens, break_kind, spawned_by_call_id, received_at, recorded_at, prompt_len, completion_len, prompt_tokens, completion_tokens, logprobs, messages_json, tools_json, response_json, raw_request_json, raw_response_json, meta_json, prompt_base_call_id, prompt_base_len FROM calls;
      DROP TABLE calls;
      ALTER TABLE calls_v3 RENAME TO calls;
      DELETE FROM sqlite_sequence WHERE name = 'calls';
      CREATE INDEX calls_by_session ON calls(session_id, seq);
      CREATE INDEX calls_by_rollout ON calls(rollout_id, seq);
    `,
  },
  {
    version: 4,
    description: "completion spans: each tool call's action / args token ranges and the malformed count, as the proxy parsed them (ICR schema 2)",
    // Rows written before stay NULL: their spans are unknown (records.ts `spans: null`), never guessed.
    sql: `ALTER TABLE calls ADD COLUMN spans_json TEXT;`,
  },
  {
    version: 5,
    description: "rollouts landed whole from rollout nodes (types.ts RolloutIngest): one row per rollout id, first attempt wins",
    // Sessions that came in a bundle keep credential_hash NOT NULL UNIQUE with a value no credential hashes to
    // (bundle.ts ingestedCredentialHash), so the sessions table needs no rebuild.
    sql: `
      CREATE TABLE rollouts (
        rollout_id TEXT PRIMARY KEY,
        attempt INTEGER NOT NULL,
        node_id TEXT NOT NULL,
        result_json TEXT NOT NULL,
        landed_at INTEGER NOT NULL UNIQUE,
        session_count INTEGER NOT NULL,
        call_count INTEGER NOT NULL
      );
    `,
  },
];

export const LATEST_SCHEMA_VERSION = MIGRATIONS.reduce((m, x) => Math.max(m, x.version), 0);

/** Brings the database to the latest schema; refuses databases written by a newer harnessrl. */
export function migrate(db: Database.Database, path: string, migrations: readonly Migration[] = MIGRATIONS): number {
  const latest = migrations.reduce((m, x) => Math.max(m, x.version), 0);
  // One IMMEDIATE transaction: two processes opening a fresh file at once cannot both apply a migration.
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    const current = (db.prepare("SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations").get() as { v: number }).v;
    if (current > latest) {
      throw new UserError(
        "store_schema_too_new",
        `the database ${path} has schema version ${current}, but this harnessrl only knows up to version ${latest}; upgrade harnessrl or use another database file`,
        { details: { path, current, latest } },
      );
    }
    const record = db.prepare("INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)");
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (m.version <= current) continue;
      db.exec(m.sql);
      record.run(m.version, m.description, Date.now());
    }
  }).immediate();
  return latest;
}

/** For read-only opens: the database must be a harnessrl store no newer than this code. */
export function checkSchema(db: Database.Database, path: string, migrations: readonly Migration[] = MIGRATIONS): number {
  const latest = migrations.reduce((m, x) => Math.max(m, x.version), 0);
  const table = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (!table) throw new UserError("store_not_harnessrl", `${path} is not a harnessrl call record store (no schema_migrations table)`, { details: { path } });
  const current = (db.prepare("SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations").get() as { v: number }).v;
  if (current > latest) {
    throw new UserError("store_schema_too_new", `the database ${path} has schema version ${current}, but this harnessrl only knows up to version ${latest}; upgrade harnessrl`, {
      details: { path, current, latest },
    });
  }
  if (current < latest) {
    throw new UserError("store_schema_old", `the database ${path} has schema version ${current} and needs migrating to ${latest}; open it once read-write`, { details: { path, current, latest } });
  }
  return current;
}
