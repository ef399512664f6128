import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { InfraError, UserError, errorMessage } from "../core/errors.js";
import { ingestedCredentialHash, nextLandedAt, parseRolloutBundle } from "./bundle.js";
import { Checkpointer, WRITER_AUTOCHECKPOINT_PAGES } from "./checkpointer.js";
import { hashCredential } from "./credentials.js";
import { checkSchema, migrate } from "./migrations.js";
import { callFromRow, encodeCall, sessionFromRow, type CallRow, type RolloutRow, type SessionRow } from "./call-row.js";
import { DeltaResolver } from "./delta-resolver.js";
import { RecentCalls } from "./recent-calls.js";
import type { CallRecord, SessionInfo } from "../icr/records.js";
import type { CallQuery, IngestOutcome, InsertHints, LandedRollout, RolloutBundle, RolloutIngest, Store, StoredCall } from "./types.js";

export interface SqliteStoreOptions {
  /** How long a writer waits for another process's lock before failing (ms). */
  busyTimeoutMs?: number;
  /** Open an existing store for reading only (no migrations; refuses other or differently versioned files). */
  readonly?: boolean;
}

/**
 * The embedded default store. WAL + synchronous=NORMAL: every insert is its own committed transaction in the WAL
 * before `insertCall` returns, so killing the process loses nothing it acknowledged (an OS crash or power loss may
 * lose the last transactions, which is the usual WAL/NORMAL trade-off for ~20x faster commits than FULL).
 */
export class SqliteStore implements Store, RolloutIngest {
  readonly kind = "sqlite";
  readonly path: string;
  private readonly db: Database.Database;
  private readonly stmts: ReturnType<SqliteStore["prepare"]>;
  private readonly statementCache = new Map<string, Database.Statement>();
  /** Calls this store wrote recently: delta bases for the next turns of their sessions. */
  private readonly recent = new RecentCalls();
  /** Checkpoints the WAL from a worker thread once this store writes calls (undefined: not started yet). */
  private checkpointer: Checkpointer | null | undefined;
  private readonly writable: boolean;

  constructor(path: string, options: SqliteStoreOptions = {}) {
    this.path = path;
    this.writable = path !== ":memory:" && !options.readonly;
    try {
      if (path !== ":memory:" && !options.readonly) mkdirSync(dirname(path), { recursive: true });
      this.db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
    } catch (e) {
      throw new UserError("store_open_failed", `cannot open the SQLite store at ${path}: ${errorMessage(e)}`, { cause: e });
    }
    try {
      this.db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
      if (options.readonly) {
        checkSchema(this.db, path);
      } else {
        this.db.pragma("journal_mode = WAL");
        this.db.pragma("synchronous = NORMAL");
        migrate(this.db, path);
      }
      this.stmts = this.prepare();
    } catch (e) {
      this.db.close();
      if (e instanceof UserError) throw e;
      // A file that is not SQLite at all (a typo'd path, a text file) is the user's to fix, not a crash.
      if ((e as { code?: unknown }).code === "SQLITE_NOTADB") throw new UserError("store_not_harnessrl", `${path} is not a SQLite database (give a new path or a harnessrl store)`, { cause: e });
      throw new InfraError("store_init_failed", `cannot initialise the SQLite store at ${path}: ${errorMessage(e)}`, { cause: e });
    }
  }

  private prepare() {
    const db = this.db;
    return {
      insertSession: db.prepare(`INSERT INTO sessions (session_id, credential_hash, rollout_id, harness, agent_role,
        parent_session_id, spawned_by_call_id, created_at, metadata_json)
        VALUES (@session_id, @credential_hash, @rollout_id, @harness, @agent_role, @parent_session_id,
        @spawned_by_call_id, @created_at, @metadata_json)`),
      sessionByCredential: db.prepare("SELECT * FROM sessions WHERE credential_hash = ?"),
      sessionById: db.prepare("SELECT * FROM sessions WHERE session_id = ?"),
      allSessions: db.prepare("SELECT * FROM sessions ORDER BY created_at, session_id"),
      sessionsByRollout: db.prepare("SELECT * FROM sessions WHERE rollout_id = ? ORDER BY created_at, session_id"),
      insertCall: db.prepare(`INSERT INTO calls (call_id, session_id, rollout_id, record_version, harness, agent_role,
        agent_id, protocol, stream, status, finish_reason, policy_version, parent_call_id, reused_prefix_tokens,
        break_kind, spawned_by_call_id, received_at, recorded_at, prompt_len, completion_len, prompt_tokens,
        completion_tokens, logprobs, messages_json, tools_json, response_json, raw_request_json, raw_response_json,
        meta_json, prompt_base_call_id, prompt_base_len, text_base_call_id, messages_keep, messages_tail, raw_request_keep,
        raw_request_tail, tools_keep, tools_tail, spans_json)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      callById: db.prepare("SELECT * FROM calls WHERE call_id = ?"),
      rolloutById: db.prepare("SELECT attempt FROM rollouts WHERE rollout_id = ?"),
      lastLandedAt: db.prepare("SELECT MAX(landed_at) AS t FROM rollouts"),
      insertRollout: db.prepare(`INSERT INTO rollouts (rollout_id, attempt, node_id, result_json, landed_at, session_count, call_count)
        VALUES (?, ?, ?, ?, ?, ?, ?)`),
    };
  }

  createSession(session: SessionInfo, credential: string): void {
    this.writeSession(session, hashCredential(credential));
  }

  private writeSession(session: SessionInfo, credentialHash: string): void {
    try {
      this.stmts.insertSession.run({
        session_id: session.sessionId,
        credential_hash: credentialHash,
        rollout_id: session.rolloutId,
        harness: session.harness,
        agent_role: session.agentRole,
        parent_session_id: session.parentSessionId,
        spawned_by_call_id: session.spawnedByCallId,
        created_at: session.createdAt,
        metadata_json: JSON.stringify(session.metadata ?? {}),
      });
    } catch (e) {
      throw this.translate(e, `session ${session.sessionId}`);
    }
  }

  sessionByCredential(credential: string): SessionInfo | null {
    const row = this.stmts.sessionByCredential.get(hashCredential(credential)) as SessionRow | undefined;
    return row ? sessionFromRow(row) : null;
  }

  getSession(sessionId: string): SessionInfo | null {
    const row = this.stmts.sessionById.get(sessionId) as SessionRow | undefined;
    return row ? sessionFromRow(row) : null;
  }

  listSessions(filter: { rolloutId?: string } = {}): SessionInfo[] {
    const rows = (filter.rolloutId === undefined ? this.stmts.allSessions.all() : this.stmts.sessionsByRollout.all(filter.rolloutId)) as SessionRow[];
    return rows.map(sessionFromRow);
  }

  insertCall(r: CallRecord, hints: InsertHints = {}): void {
    if (this.checkpointer === undefined) this.startCheckpointer();
    const call = encodeCall(r, hints, this.recent);
    try {
      this.stmts.insertCall.run(...call.values);
    } catch (e) {
      throw this.translate(e, `call ${r.callId}`);
    }
    call.remember();
  }

  /**
   * One IMMEDIATE transaction: the rollout row, its sessions and calls commit together or not at all, and a second
   * writer (another process ingesting the same rollout) waits for the first and then sees it landed.
   */
  ingestRollout(input: RolloutBundle): IngestOutcome {
    const bundle = parseRolloutBundle(input);
    const written: string[] = [];
    try {
      return this.db
        .transaction((): IngestOutcome => {
          const first = this.stmts.rolloutById.get(bundle.rolloutId) as { attempt: number } | undefined;
          if (first) return { status: "duplicate", landedAttempt: first.attempt };
          for (const s of bundle.sessions) this.writeSession(s, ingestedCredentialHash(s.sessionId));
          for (const c of bundle.calls) {
            this.insertCall(c);
            written.push(c.callId);
          }
          const landedAt = nextLandedAt((this.stmts.lastLandedAt.get() as { t: number | null }).t);
          this.stmts.insertRollout.run(bundle.rolloutId, bundle.attempt, bundle.nodeId, JSON.stringify(bundle.result), landedAt, bundle.sessions.length, bundle.calls.length);
          return { status: "inserted" };
        })
        .immediate();
    } catch (e) {
      // Rolled back: the calls written in it must not serve as delta bases of later inserts.
      for (const id of written) this.recent.delete(id);
      if (e instanceof UserError || e instanceof InfraError) throw e;
      throw this.translate(e, `rollout ${bundle.rolloutId}`);
    }
  }

  listLandedRollouts(filter: { afterLandedAt?: number; limit?: number } = {}): LandedRollout[] {
    const limit = filter.limit === undefined ? "" : ` LIMIT ${Math.max(0, Math.floor(filter.limit))}`;
    const rows = this.cached(`SELECT * FROM rollouts WHERE landed_at > ? ORDER BY landed_at${limit}`).all(filter.afterLandedAt ?? Number.MIN_SAFE_INTEGER) as RolloutRow[];
    return rows.map((r) => ({ rolloutId: r.rollout_id, attempt: r.attempt, nodeId: r.node_id, result: JSON.parse(r.result_json) as Record<string, unknown>, landedAt: r.landed_at }));
  }

  getCall(callId: string): CallRecord | null {
    const row = this.stmts.callById.get(callId) as CallRow | undefined;
    return row ? this.decode(row, this.resolver()) : null;
  }

  listCalls(query: CallQuery = {}): CallRecord[] {
    const resolver = this.resolver();
    return this.selectCalls(query).map((row) => this.decode(row, resolver));
  }

  listCallEntries(query: CallQuery = {}): StoredCall[] {
    const resolver = this.resolver();
    return this.selectCalls(query).map((row) => ({ seq: row.seq, record: this.decode(row, resolver) }));
  }

  private resolver(): DeltaResolver {
    return new DeltaResolver((id) => this.stmts.callById.get(id) as CallRow | undefined, this.path);
  }

  /** A record with its whole prompt and texts (deltas resolved against bases read earlier or fetched by id). */
  private decode(row: CallRow, resolver: DeltaResolver): CallRecord {
    return callFromRow(row, resolver.resolve(row));
  }

  countCalls(query: { sessionId?: string; rolloutId?: string } = {}): number {
    const { where, params } = whereClause(query);
    return (this.cached(`SELECT COUNT(*) AS n FROM calls${where}`).get(...params) as { n: number }).n;
  }

  close(): void {
    this.checkpointer?.close();
    this.checkpointer = null;
    if (this.db.open) this.db.close();
  }

  private startCheckpointer(): void {
    this.checkpointer = this.writable ? Checkpointer.start(this.path, () => this.checkpointInline()) : null;
    if (this.checkpointer) this.db.pragma(`wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`);
  }

  /** Back to SQLite's own checkpoints (the worker failed). */
  private checkpointInline(): void {
    this.checkpointer = null;
    if (this.db.open) this.db.pragma("wal_autocheckpoint = 1000");
  }

  private selectCalls(query: CallQuery): CallRow[] {
    const { where, params } = whereClause(query);
    const limit = query.limit === undefined ? "" : ` LIMIT ${Math.max(0, Math.floor(query.limit))}`;
    return this.cached(`SELECT * FROM calls${where} ORDER BY seq${limit}`).all(...params) as CallRow[];
  }

  /** Query shapes are few (filter combinations); prepare each once. */
  private cached(sql: string): Database.Statement {
    let stmt = this.statementCache.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      if (this.statementCache.size < 64) this.statementCache.set(sql, stmt);
    }
    return stmt;
  }

  private translate(e: unknown, what: string): Error {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("SQLITE_CONSTRAINT")) {
      return new UserError("store_duplicate", `${what} conflicts with an existing row (${errorMessage(e)})`, { cause: e });
    }
    const retryable = code === "SQLITE_BUSY" || code === "SQLITE_LOCKED";
    return new InfraError("store_write_failed", `writing ${what} to ${this.path} failed: ${errorMessage(e)}`, { cause: e, retryable });
  }
}

function whereClause(query: CallQuery): { where: string; params: (string | number)[] } {
  const conds: string[] = [];
  const params: (string | number)[] = [];
  if (query.sessionId !== undefined) {
    conds.push("session_id = ?");
    params.push(query.sessionId);
  }
  if (query.rolloutId !== undefined) {
    conds.push("rollout_id = ?");
    params.push(query.rolloutId);
  }
  if (query.afterSeq !== undefined) {
    conds.push("seq > ?");
    params.push(query.afterSeq);
  }
  return { where: conds.length ? ` WHERE ${conds.join(" AND ")}` : "", params };
}

