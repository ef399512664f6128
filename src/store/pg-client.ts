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
  /** Replies taken off the port by one waiter for another (sync and async requests share the port). */
  private readonly replies = new Map<number, PgReply>();
  private asyncTurn: Promise<unknown> = Promise.resolve();
  private asyncTxOpen = false;

  constructor(private readonly options: PgConnectionOptions) {}

  /** Runs the statements as `mode` says and returns each one's rows. Throws HarnessRLErrors only. */
  request(mode: PgMode, statements: PgStatement[]): PgRow[][] {
    // On the one connection, a statement sent while an async transaction is open would run inside it.
    if (this.asyncTxOpen) throw new InfraError("store_busy", `the Postgres store ${this.options.where} has an async transaction open; a synchronous request now would join it`);
    const { worker, port, signal, id, deadline } = this.send(mode, statements);
    for (;;) {
      // Clear the flag before looking: a reply posted after the look sets it again, so the wait cannot miss it.
      Atomics.store(signal, 0, 0);
      const reply = this.take(port, id);
      if (reply !== undefined) return this.settle(reply);
      const left = deadline - Date.now();
      if (left <= 0) throw this.timedOut(worker);
      Atomics.wait(signal, 0, 0, left);
    }
  }

  /**
   * `request` without blocking this thread: it awaits the worker's reply (Atomics.waitAsync on the same flag), so
   * timers, sockets and lock renewals keep running while a slow or frozen server is waited on (a rollout node's
   * queue locks lapsed while a synchronous landing waited out query_timeout).
   */
  async requestAsync(mode: PgMode, statements: PgStatement[]): Promise<PgRow[][]> {
    const { worker, port, signal, id, deadline } = this.send(mode, statements);
    for (;;) {
      Atomics.store(signal, 0, 0);
      const reply = this.take(port, id);
      if (reply !== undefined) return this.settle(reply);
      const left = deadline - Date.now();
      if (left <= 0) throw this.timedOut(worker);
      const wait = Atomics.waitAsync(signal, 0, 0, left);
      if (wait.async) await wait.value;
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

  /**
   * `transaction` on requestAsync. Async transactions run one at a time (the connection holds one transaction), and
   * synchronous requests are refused while one is open.
   */
  transactionAsync<T>(first: PgStatement[], fn: (firstRows: PgRow[][], run: (mode: "in" | "commit", s: PgStatement[]) => Promise<PgRow[][]>) => Promise<T>): Promise<T> {
    const turn = this.asyncTurn.then(async () => {
      this.asyncTxOpen = true;
      let open = true;
      try {
        // A failed BEGIN has opened nothing (as in `transaction`): no rollback then, which would wait out a frozen server twice.
        let firstRows: PgRow[][];
        try {
          firstRows = await this.requestAsync("begin", first);
        } catch (e) {
          open = false;
          throw e;
        }
        return await fn(firstRows, (mode, s) => {
          if (mode === "commit") open = false;
          return this.requestAsync(mode, s);
        });
      } finally {
        if (open) await this.requestAsync("rollback", []).catch(() => undefined);
        this.asyncTxOpen = false;
      }
    });
    this.asyncTurn = turn.catch(() => undefined);
    return turn;
  }

  /** Posts one request to the worker (started if need be), with what its waiter needs. */
  private send(mode: PgMode, statements: PgStatement[]): { worker: Worker | null; port: MessagePort; signal: Int32Array; id: number; deadline: number } {
    if (this.closed) throw new UserError("store_closed", `the Postgres store ${this.options.where} is closed`);
    const port = this.ensureWorker();
    const id = this.nextId++;
    port.postMessage({ id, mode, statements });
    return { worker: this.worker, port, signal: this.signal, id, deadline: Date.now() + this.options.connectTimeoutMs + this.options.queryTimeoutMs + WAIT_SLACK_MS };
  }

  /** The reply to request `id` if it has come: replies to other requests met on the way are kept for their waiters. */
  private take(port: MessagePort, id: number): PgReply | undefined {
    const kept = this.replies.get(id);
    if (kept !== undefined) {
      this.replies.delete(id);
      return kept;
    }
    for (let got = receiveMessageOnPort(port); got !== undefined; got = receiveMessageOnPort(port)) {
      const r = got.message as PgReply;
      if (r.id === id) return r;
      if (r.id < this.nextId) this.replies.set(r.id, r);
    }
    return undefined;
  }

  private settle(r: PgReply): PgRow[][] {
    if (r.ok) return r.rows;
    throw this.translate(r.error);
  }

  /** The worker is stuck (it should have timed out itself): replace it, so no late reply is taken for a later request. */
  private timedOut(worker: Worker | null): HarnessRLError {
    if (this.worker === worker) this.stopWorker();
    return new InfraError("store_unreachable", `the Postgres store ${this.options.where} did not answer in time`, { details: { where: this.options.where } });
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
