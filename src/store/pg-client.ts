import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import { compiledScript } from "../core/compiled-script.js";
import { InfraError, UserError, type HarnessRLError } from "../core/errors.js";
import type { PgFailure, PgMode, PgReply, PgRow, PgStatement, PgWorkerData } from "./pg-protocol.js";

/**
 * A synchronous Postgres connection: the `pg` client runs in a worker thread and this thread blocks on Atomics.wait
 * until the worker has posted the reply, which it then takes with receiveMessageOnPort. One request is one wait,
 * whatever it holds (a whole bundle's inserts, a page of rows). This keeps the `Store` interface synchronous, so the
 * proxy's durable insert and every reader (trees, batches, export, reports) work on Postgres unchanged.
 */

export interface PgConnectionOptions {
  connectionString: string;
  schema: string | null;
  connectTimeoutMs: number;
  queryTimeoutMs: number;
  /** The connection string without its password, for messages. */
  where: string;
}

/** The compiled worker next to this module, or in dist/ when this module runs from its TypeScript source (tests). */
function workerFile(): string | undefined {
  return compiledScript(new URL("./pg-worker.js", import.meta.url));
}

/** Slack beyond the worker's own connect + query timeouts before the facade gives up on it. */
const WAIT_SLACK_MS = 5_000;

export class SyncPgClient {
  private worker: Worker | null = null;
  private port: MessagePort | null = null;
  private signal = new Int32Array(new SharedArrayBuffer(4));
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: PgConnectionOptions) {}

  /** Runs the statements as `mode` says and returns each one's rows. Throws HarnessRLErrors only. */
  request(mode: PgMode, statements: PgStatement[]): PgRow[][] {
    if (this.closed) throw new UserError("store_closed", `the Postgres store ${this.options.where} is closed`);
    const port = this.ensureWorker();
    const id = this.nextId++;
    port.postMessage({ id, mode, statements });
    const deadline = Date.now() + this.options.connectTimeoutMs + this.options.queryTimeoutMs + WAIT_SLACK_MS;
    for (;;) {
      // Clear the flag before looking: a reply posted after the look sets it again, so the wait cannot miss it.
      Atomics.store(this.signal, 0, 0);
      const got = receiveMessageOnPort(port);
      if (got !== undefined) {
        const r = got.message as PgReply;
        if (r.id !== id) continue;
        if (r.ok) return r.rows;
        throw this.translate(r.error);
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        // The worker is stuck (it should have timed out itself): replace it, so no late reply is taken for a later request.
        this.stopWorker();
        throw new InfraError("store_unreachable", `the Postgres store ${this.options.where} did not answer in time`, { details: { where: this.options.where } });
      }
      Atomics.wait(this.signal, 0, 0, left);
    }
  }

  /** A transaction spread over several requests: `fn` gets a query function; COMMIT when it returns, ROLLBACK if it throws. */
  transaction<T>(first: PgStatement[], fn: (firstRows: PgRow[][], run: (mode: "in" | "commit", s: PgStatement[]) => PgRow[][]) => T): T {
    const firstRows = this.request("begin", first);
    let open = true;
    try {
      return fn(firstRows, (mode, s) => {
        if (mode === "commit") open = false;
        return this.request(mode, s);
      });
    } finally {
      // Not committed (returned early or threw): roll back. A lost connection rolls back on the server by itself.
      if (open) {
        try {
          this.request("rollback", []);
        } catch {
          // See above.
        }
      }
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.port?.postMessage("close");
    const w = this.worker;
    this.worker = null;
    this.port = null;
    // The worker ends its connection and exits; the process need not wait for it.
    if (w) setTimeout(() => void w.terminate(), 1_000).unref();
  }

  private ensureWorker(): MessagePort {
    if (this.worker && this.port) return this.port;
    const file = workerFile();
    if (file === undefined) throw new InfraError("store_worker_not_built", "the Postgres store's worker (dist/store/pg-worker.js) is not built; run npm run build");
    const { port1, port2 } = new MessageChannel();
    this.signal = new Int32Array(new SharedArrayBuffer(4));
    const data: PgWorkerData & { port: MessagePort } = {
      connectionString: this.options.connectionString,
      schema: this.options.schema,
      connectTimeoutMs: this.options.connectTimeoutMs,
      queryTimeoutMs: this.options.queryTimeoutMs,
      signal: this.signal.buffer as SharedArrayBuffer,
      port: port2,
    };
    // No inherited execArgv: under `node -e …` it would make the worker evaluate the parent's script again.
    const worker = new Worker(file, { workerData: data, transferList: [port2], execArgv: [] });
    worker.unref();
    worker.on("error", () => {
      if (this.worker === worker) this.stopWorker();
    });
    worker.on("exit", () => {
      if (this.worker === worker) this.stopWorker();
    });
    this.worker = worker;
    this.port = port1;
    return port1;
  }

  private stopWorker(): void {
    const w = this.worker;
    this.worker = null;
    this.port?.close();
    this.port = null;
    if (w) void w.terminate();
  }

  private translate(f: PgFailure): HarnessRLError {
    const where = this.options.where;
    const details = { where, pgCode: f.code };
    if (f.connectionLost) return new InfraError("store_unreachable", `the Postgres store ${where} is unreachable: ${f.message}`, { details, retryable: true });
    switch (f.code) {
      case "23505":
        return new UserError("store_duplicate", `${f.message} (${where})`, { details });
      case "28P01":
      case "28000":
        return new UserError("store_auth_failed", `the Postgres store ${where} refused the login: ${f.message}`, { details });
      case "3D000":
        return new UserError("store_not_found", `the Postgres store ${where} does not exist: ${f.message}`, { details });
      case "40001":
      case "40P01":
      case "55P03":
        return new InfraError("store_write_failed", `the Postgres store ${where}: ${f.message}`, { details, retryable: true });
      default:
        return new InfraError("store_write_failed", `the Postgres store ${where}: ${f.message}`, { details });
    }
  }
}
