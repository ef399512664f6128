/**
 * Messages between the Postgres store's synchronous facade (pg-client.ts) and its worker thread (pg-worker.ts).
 * Types only: both sides import them.
 */

export type PgValue = string | number | boolean | null | Uint8Array;
export type PgRow = Record<string, unknown>;

export interface PgStatement {
  sql: string;
  params?: PgValue[];
}

/**
 * How a request's statements run. `auto`: each on its own (autocommit). `tx`: BEGIN, the statements, COMMIT, in one
 * request. `begin` / `in` / `commit` / `rollback`: a transaction spread over requests (the caller decides between
 * them); the worker refuses `in` and `commit` when the connection that began it was lost.
 */
export type PgMode = "auto" | "tx" | "begin" | "in" | "commit" | "rollback";

export interface PgRequest {
  id: number;
  mode: PgMode;
  statements: PgStatement[];
}

export interface PgFailure {
  message: string;
  /** SQLSTATE for server errors, errno code (ECONNREFUSED, …) for socket errors, when known. */
  code: string | undefined;
  /** The connection is gone or unusable (refused, reset, timed out): the worker reconnects on the next request. */
  connectionLost: boolean;
}

export type PgReply = { id: number; ok: true; rows: PgRow[][] } | { id: number; ok: false; error: PgFailure };

export interface PgWorkerData {
  connectionString: string;
  /** Postgres schema to create if missing and put first on the search path; null: the server's default. */
  schema: string | null;
  connectTimeoutMs: number;
  queryTimeoutMs: number;
  /** Int32Array over a SharedArrayBuffer: slot 0 is set to 1 and notified when a reply was posted. */
  signal: SharedArrayBuffer;
}
