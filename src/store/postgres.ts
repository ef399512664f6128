import { UserError } from "../core/errors.js";
import type { CallRecord, SessionInfo } from "../icr/records.js";
import { parseRolloutBundle } from "./bundle.js";
import { CALL_COLUMNS, callFromRow, encodeCall, sessionFromRow, type CallRow, type RolloutRow, type SessionRow } from "./call-row.js";
import { hashCredential } from "./credentials.js";
import { DeltaResolver } from "./delta-resolver.js";
import { SyncPgClient, type PgConnectionOptions } from "./pg-client.js";
import { PG_LOCK_WRITE, lockSql, migratePostgres } from "./pg-migrations.js";
import type { PgRow, PgStatement, PgValue } from "./pg-protocol.js";
import { RecentCalls } from "./recent-calls.js";
import type { CallQuery, IngestOutcome, InsertHints, LandedRollout, RolloutBundle, RolloutIngest, Store, StoredCall } from "./types.js";

/**
 * The run's central record store on Postgres: rollout nodes ship finished rollouts into it (ingestRollout), and
 * every reader opens it by spec like a SQLite file. Same rows as SQLite (call-row.ts), reached through a synchronous
 * facade over a worker-thread `pg` client (pg-client.ts), so the `Store` interface stays synchronous.
 */

const DEFAULT_CONNECT_TIMEOUT_S = 10;
const DEFAULT_QUERY_TIMEOUT_S = 60;
/** Rows per request when listing calls: bounds the memory of one message, not the number of rows returned. */
const PAGE_ROWS = 2_000;
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * `postgres://user:password@host:port/database` (or `postgresql://`), with libpq's parameters (`sslmode`, a unix
 * socket directory as `host=`), plus `schema=<name>` (one run per schema in a shared database; created if missing),
 * `connect_timeout=<s>` (libpq's meaning, default 10) and `query_timeout=<s>` (default 60): past them a call fails
 * with the retryable `store_unreachable`.
 */
export function parsePostgresSpec(spec: string): PgConnectionOptions {
  let url: URL;
  try {
    url = new URL(spec.trim());
  } catch (e) {
    throw new UserError("invalid_store_spec", `not a Postgres URL: ${redact(spec)} (use postgres://user:password@host:port/database)`, { cause: e });
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") throw new UserError("invalid_store_spec", `not a Postgres URL: ${redact(spec)}`);
  const seconds = (name: string, fallback: number): number => {
    const raw = url.searchParams.get(name);
    url.searchParams.delete(name);
    if (raw === null) return fallback;
    const v = Number(raw);
    if (!Number.isFinite(v) || v <= 0) throw new UserError("invalid_store_spec", `${name} must be a positive number of seconds (got "${raw}")`);
    return v;
  };
  const schema = url.searchParams.get("schema");
  url.searchParams.delete("schema");
  if (schema !== null && !SCHEMA_NAME.test(schema)) throw new UserError("invalid_store_spec", `schema must be a plain SQL identifier (letters, digits, _; got "${schema}")`);
  const connectTimeoutMs = seconds("connect_timeout", DEFAULT_CONNECT_TIMEOUT_S) * 1000;
  const queryTimeoutMs = seconds("query_timeout", DEFAULT_QUERY_TIMEOUT_S) * 1000;
  const host = url.host || url.searchParams.get("host") || "localhost";
  const where = `${url.protocol}//${url.username ? `${decodeURIComponent(url.username)}@` : ""}${host}${url.pathname}${schema ? `?schema=${schema}` : ""}`;
  return { connectionString: url.toString(), schema, connectTimeoutMs, queryTimeoutMs, where };
}

/** The spec with any password replaced, for messages. */
function redact(spec: string): string {
  return spec.replace(/(\/\/[^:/@]*:)[^@/]*@/, "$1***@").replace(/(password=)[^&]*/i, "$1***");
}

const CALL_INSERT = `INSERT INTO calls (${CALL_COLUMNS.join(", ")}) VALUES (${CALL_COLUMNS.map((_, i) => `$${i + 1}`).join(", ")})`;
const SESSION_INSERT = `INSERT INTO sessions (session_id, credential_hash, rollout_id, harness, agent_role, parent_session_id, spawned_by_call_id, created_at, metadata_json)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;
/** An ingest's first request: take the write lock, then look the rollout up. */
const ingestLookup = (bundle: RolloutBundle): PgStatement[] => [{ sql: lockSql(PG_LOCK_WRITE) }, { sql: "SELECT attempt FROM rollouts WHERE rollout_id = $1", params: [bundle.rolloutId] }];

/** landed_at: the writer's wall-clock ms, strictly after the last landing (the write lock is held), as bundle.ts nextLandedAt. */
const ROLLOUT_INSERT = `INSERT INTO rollouts (rollout_id, attempt, node_id, result_json, landed_at, session_count, call_count)
  VALUES ($1, $2, $3, $4, GREATEST($5::bigint, COALESCE((SELECT MAX(landed_at) FROM rollouts), 0) + 1), $6, $7)`;

export class PostgresStore implements Store, RolloutIngest {
  readonly kind = "postgres";
  /** The spec without its password. */
  readonly where: string;
  private readonly db: SyncPgClient;
  /** Calls this store wrote recently: delta bases for the next turns of their sessions. */
  private readonly recent = new RecentCalls();

  /** Connects and migrates; throws `store_unreachable` (retryable) when the server cannot be reached. */
  constructor(spec: string) {
    const options = parsePostgresSpec(spec);
    this.where = options.where;
    this.db = new SyncPgClient(options);
    try {
      migratePostgres(this.db, this.where);
    } catch (e) {
      this.db.close();
      throw e;
    }
  }

  createSession(session: SessionInfo, credential: string): void {
    this.db.request("auto", [sessionInsert(session, hashCredential(credential))]);
  }

  sessionByCredential(credential: string): SessionInfo | null {
    const row = this.one<SessionRow>("SELECT * FROM sessions WHERE credential_hash = $1", [hashCredential(credential)]);
    return row ? sessionFromRow(row) : null;
  }

  getSession(sessionId: string): SessionInfo | null {
    const row = this.one<SessionRow>("SELECT * FROM sessions WHERE session_id = $1", [sessionId]);
    return row ? sessionFromRow(row) : null;
  }

  listSessions(filter: { rolloutId?: string } = {}): SessionInfo[] {
    const rows =
      filter.rolloutId === undefined
        ? this.all<SessionRow>("SELECT * FROM sessions ORDER BY created_at, session_id")
        : this.all<SessionRow>("SELECT * FROM sessions WHERE rollout_id = $1 ORDER BY created_at, session_id", [filter.rolloutId]);
    return rows.map(sessionFromRow);
  }

  /** One transaction under the write lock: committed (durable, synchronous_commit) when this returns. */
  insertCall(r: CallRecord, hints: InsertHints = {}): void {
    const call = encodeCall(r, hints, this.recent);
    this.db.request("tx", [{ sql: lockSql(PG_LOCK_WRITE) }, { sql: CALL_INSERT, params: call.values }]);
    call.remember();
  }

  /**
   * One transaction: take the write lock, look the rollout up (a duplicate rolls back having changed nothing), then
   * its sessions, calls and rollout row in one request that commits. Concurrent nodes landing the same rollout wait
   * on the lock; the second then sees the first landed.
   */
  ingestRollout(input: RolloutBundle): IngestOutcome {
    const bundle = parseRolloutBundle(input);
    const written: string[] = [];
    try {
      return this.db.transaction(ingestLookup(bundle), (rows, run): IngestOutcome => {
        const plan = this.ingestPlan(bundle, rows, written);
        if ("duplicate" in plan) return plan.duplicate;
        run("commit", plan.statements);
        return { status: "inserted" };
      });
    } catch (e) {
      for (const id of written) this.recent.delete(id);
      throw e;
    }
  }

  /** ingestRollout without blocking the event loop while the server is waited on (what a rollout node uses). */
  async ingestRolloutAsync(input: RolloutBundle): Promise<IngestOutcome> {
    const bundle = parseRolloutBundle(input);
    const written: string[] = [];
    try {
      return await this.db.transactionAsync(ingestLookup(bundle), async (rows, run): Promise<IngestOutcome> => {
        const plan = this.ingestPlan(bundle, rows, written);
        if ("duplicate" in plan) return plan.duplicate;
        await run("commit", plan.statements);
        return { status: "inserted" };
      });
    } catch (e) {
      for (const id of written) this.recent.delete(id);
      throw e;
    }
  }

  /** A landed rollout (the lookup found it) is a duplicate; else its sessions, calls and rollout row to insert. */
  private ingestPlan(bundle: RolloutBundle, lookup: PgRow[][], written: string[]): { duplicate: IngestOutcome } | { statements: PgStatement[] } {
    const first = lookup[1]?.[0] as { attempt: number } | undefined;
    if (first) return { duplicate: { status: "duplicate", landedAttempt: first.attempt } };
    const statements: PgStatement[] = bundle.sessions.map((s) => sessionInsert(s, null));
    for (const c of bundle.calls) {
      const call = encodeCall(c, {}, this.recent);
      statements.push({ sql: CALL_INSERT, params: call.values });
      // Later calls of the bundle are deltas of earlier ones; forgotten again by the caller if the bundle rolls back.
      call.remember();
      written.push(c.callId);
    }
    statements.push({ sql: ROLLOUT_INSERT, params: [bundle.rolloutId, bundle.attempt, bundle.nodeId, JSON.stringify(bundle.result), Date.now(), bundle.sessions.length, bundle.calls.length] });
    return { statements };
  }

  listLandedRollouts(filter: { afterLandedAt?: number; limit?: number } = {}): LandedRollout[] {
    const limit = filter.limit === undefined ? "" : ` LIMIT ${Math.max(0, Math.floor(filter.limit))}`;
    const rows = this.all<RolloutRow>(`SELECT * FROM rollouts WHERE landed_at > $1 ORDER BY landed_at${limit}`, [filter.afterLandedAt ?? Number.MIN_SAFE_INTEGER]);
    return rows.map((r) => ({ rolloutId: r.rollout_id, attempt: r.attempt, nodeId: r.node_id, result: JSON.parse(r.result_json) as Record<string, unknown>, landedAt: r.landed_at }));
  }

  getCall(callId: string): CallRecord | null {
    const row = this.callRow(callId);
    return row ? callFromRow(row, this.resolver().resolve(row)) : null;
  }

  listCalls(query: CallQuery = {}): CallRecord[] {
    const resolver = this.resolver();
    return this.selectCalls(query).map((row) => callFromRow(row, resolver.resolve(row)));
  }

  listCallEntries(query: CallQuery = {}): StoredCall[] {
    const resolver = this.resolver();
    return this.selectCalls(query).map((row) => ({ seq: row.seq, record: callFromRow(row, resolver.resolve(row)) }));
  }

  countCalls(query: { sessionId?: string; rolloutId?: string } = {}): number {
    const { where, params } = whereClause(query, 1);
    return Number(this.one<{ n: number }>(`SELECT COUNT(*)::bigint AS n FROM calls${where}`, params)?.n ?? 0);
  }

  close(): void {
    this.db.close();
  }

  private resolver(): DeltaResolver {
    return new DeltaResolver((id) => this.callRow(id), this.where);
  }

  private callRow(callId: string): CallRow | undefined {
    return this.one<CallRow>("SELECT * FROM calls WHERE call_id = $1", [callId]);
  }

  /** Pages through the matching calls by seq, so no single reply holds a whole run. */
  private selectCalls(query: CallQuery): CallRow[] {
    const out: CallRow[] = [];
    let after = query.afterSeq ?? 0;
    const limit = query.limit === undefined ? Infinity : Math.max(0, Math.floor(query.limit));
    while (out.length < limit) {
      const page = Math.min(PAGE_ROWS, limit - out.length);
      const { where, params } = whereClause({ ...query, afterSeq: after }, 1);
      const rows = this.all<CallRow>(`SELECT * FROM calls${where} ORDER BY seq LIMIT ${page}`, params);
      out.push(...rows);
      if (rows.length < page) break;
      after = (rows[rows.length - 1] as CallRow).seq;
    }
    return out;
  }

  private all<T>(sql: string, params: PgValue[] = []): T[] {
    return (this.db.request("auto", [{ sql, params }])[0] ?? []) as T[];
  }

  private one<T>(sql: string, params: PgValue[] = []): T | undefined {
    return this.all<T>(sql, params)[0];
  }
}

function sessionInsert(s: SessionInfo, credentialHash: string | null): PgStatement {
  return {
    sql: SESSION_INSERT,
    params: [s.sessionId, credentialHash, s.rolloutId, s.harness, s.agentRole, s.parentSessionId, s.spawnedByCallId, s.createdAt, JSON.stringify(s.metadata ?? {})],
  };
}

function whereClause(query: CallQuery, first: number): { where: string; params: PgValue[] } {
  const conds: string[] = [];
  const params: PgValue[] = [];
  const add = (cond: string, value: PgValue): void => {
    params.push(value);
    conds.push(`${cond} $${first + params.length - 1}`);
  };
  if (query.sessionId !== undefined) add("session_id =", query.sessionId);
  if (query.rolloutId !== undefined) add("rollout_id =", query.rolloutId);
  if (query.afterSeq !== undefined) add("seq >", query.afterSeq);
  return { where: conds.length ? ` WHERE ${conds.join(" AND ")}` : "", params };
}

