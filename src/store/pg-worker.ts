/**
 * Worker thread of the Postgres store: owns the one `pg` connection and runs the statements the synchronous facade
 * (pg-client.ts) sends, one request at a time. It replies on the request port, then wakes the facade's Atomics.wait.
 * A lost connection is dropped and reopened on the next request, so a store outlives a Postgres restart or outage.
 */
import type { MessagePort } from "node:worker_threads";
import { workerData } from "node:worker_threads";
import pg from "pg";
import { InfraError } from "../core/errors.js";
import type { PgFailure, PgReply, PgRequest, PgRow, PgWorkerData } from "./pg-protocol.js";

const data = workerData as PgWorkerData & { port: MessagePort };
const signal = new Int32Array(data.signal);
const INT8_OID = 20;
// BIGINT (seq, timestamps) as numbers: every value we store fits 2^53.
const types = { getTypeParser: (oid: number, format?: "text" | "binary"): unknown => (oid === INT8_OID && format !== "binary" ? Number : pg.types.getTypeParser(oid, format)) };

let client: pg.Client | null = null;
/** Set when the connection broke under us (an 'error' event between requests). */
let broken = false;
/** The connection a multi-request transaction began on; `in` / `commit` must run on it. */
let txClient: pg.Client | null = null;

async function connection(): Promise<pg.Client> {
  if (client && !broken) return client;
  drop();
  const c = new pg.Client({
    connectionString: data.connectionString,
    connectionTimeoutMillis: data.connectTimeoutMs,
    query_timeout: data.queryTimeoutMs,
    keepAlive: true,
    application_name: "harnessrl",
    types: types as pg.CustomTypesConfig,
  });
  c.on("error", () => {
    if (client === c) broken = true;
  });
  try {
    await c.connect();
    if (data.schema !== null) {
      await c.query(`CREATE SCHEMA IF NOT EXISTS "${data.schema}"`);
      await c.query(`SET search_path TO "${data.schema}"`);
    }
  } catch (e) {
    void c.end().catch(() => undefined);
    throw e;
  }
  client = c;
  broken = false;
  return c;
}

function drop(): void {
  const c = client;
  client = null;
  txClient = null;
  if (c) void c.end().catch(() => undefined);
}

/** Socket-level failures and the server classes that mean "this connection is gone". */
const LOST_ERRNO = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "EPIPE", "ENOENT"]);

function failure(e: unknown): PgFailure {
  const err = e as { message?: unknown; code?: unknown };
  const message = typeof err.message === "string" ? err.message : String(e);
  const code = typeof err.code === "string" ? err.code : undefined;
  const lost =
    (code !== undefined && (LOST_ERRNO.has(code) || code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03" || code === "store_unreachable")) ||
    /Connection terminated|timeout|not queryable|Client was closed/i.test(message);
  return { message, code, connectionLost: lost };
}

async function run(req: PgRequest): Promise<PgRow[][]> {
  if ((req.mode === "in" || req.mode === "commit") && (txClient === null || txClient !== client || broken)) {
    throw new InfraError("store_unreachable", "the connection was lost inside a transaction");
  }
  if (req.mode === "rollback") {
    const c = txClient;
    txClient = null;
    if (c && c === client && !broken) await c.query("ROLLBACK");
    return [];
  }
  const c = await connection();
  const out: PgRow[][] = [];
  const wraps = req.mode === "tx" || req.mode === "begin";
  if (wraps) await c.query("BEGIN");
  if (req.mode === "begin") txClient = c;
  try {
    for (const s of req.statements) out.push((await c.query(s.sql, s.params)).rows as PgRow[]);
    if (req.mode === "tx" || req.mode === "commit") {
      txClient = null;
      await c.query("COMMIT");
    }
  } catch (e) {
    txClient = null;
    if (req.mode !== "auto" && client === c && !broken) await c.query("ROLLBACK").catch(() => undefined);
    throw e;
  }
  return out;
}

function reply(r: PgReply): void {
  data.port.postMessage(r);
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
}

// Requests come one at a time (the facade blocks until each reply), so a simple chain keeps them in order.
let chain: Promise<void> = Promise.resolve();
data.port.on("message", (req: PgRequest | "close") => {
  if (req === "close") {
    chain = chain.then(async () => {
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
      data.port.close();
    });
    return;
  }
  chain = chain.then(async () => {
    try {
      reply({ id: req.id, ok: true, rows: await run(req) });
    } catch (e) {
      const f = failure(e);
      if (f.connectionLost) drop();
      reply({ id: req.id, ok: false, error: f });
    }
  });
});
