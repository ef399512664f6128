import { spawn, type ChildProcess } from "node:child_process";
import { delimiter } from "node:path";
import { InfraError, errorMessage, errorOfCode, type ErrorCode, type HarnessRLError } from "../core/errors.js";
import { pythonExecutable, workerPackageDir } from "./paths.js";
import type { DistributedOptions } from "./types.js";
import { MessageDecoder, encodeMessage, type WireArray, type WireDtype, type WireMessage } from "./wire.js";
import { WORKER_OPS, type WorkerArgs, type WorkerOp, type WorkerOpSpec } from "./worker-ops.js";
import { killChild } from "../core/kill-child.js";

/** The protocol version this client speaks; the worker reports its own in `hello`. */
export const WORKER_PROTOCOL_VERSION = 1;

export interface WorkerClientOptions {
  /** Python interpreter (default: HARNESSRL_PYTHON or /usr/bin/python3). */
  python?: string;
  /** Torch device: auto (cuda when available), cpu, cuda, cuda:N. */
  device?: string;
  /** Torch CPU threads (default: min(2, cores)). */
  threads?: number;
  /** Max rows × padded length per forward pass in the worker. */
  tokenBudget?: number;
  /** forward_backward recomputes attention in backward for rows whose longest path has this many tokens (0 = never;
   * worker default 4096). */
  longRowTokens?: number;
  /** forward_backward scores every token and keeps its logits for backward (the pre-chunking path; default off). */
  storedLogits?: boolean;
  /** Runs the last layer at every position, not only where scored tokens read it (the pre-pruning path; default off). */
  fullLastLayer?: boolean;
  /** torch.autocast dtype for every op, float32 master weights (absent: off). */
  autocast?: "bf16" | "fp16";
  /** Data-parallel ranks behind this worker (it becomes rank 0); absent = one process. */
  distributed?: DistributedOptions;
  /** Default per-request timeout; 0 disables. A timed-out worker is killed (its state is unknown). */
  requestTimeoutMs?: number;
  /** Extra environment for the worker process. */
  env?: Record<string, string>;
  /** Receives the worker's stderr lines (warnings, tracebacks); by default they are kept for error messages only. */
  onStderr?: (line: string) => void;
}

export interface WorkerReply {
  result: Record<string, unknown>;
  frames: Map<string, WireArray>;
}

export interface RequestOptions {
  timeoutMs?: number;
}

interface Pending {
  op: string;
  resolve: (r: WorkerReply) => void;
  reject: (e: HarnessRLError) => void;
  timer: NodeJS.Timeout | undefined;
}

const STDERR_TAIL_LINES = 40;

/** Worker error codes that mean the caller pointed at something wrong (a path, a model directory). */
/**
 * The worker's wire error codes (worker/harnessrl_worker, docs/worker.md) as catalogue codes. The wire keeps its own
 * spelling; unknown codes become `trainer_failed`.
 */
export const WORKER_ERROR_CODES: Readonly<Record<string, ErrorCode>> = {
  bad_message: "worker_protocol",
  bad_request: "invalid_trainer_request",
  unknown_op: "unknown_op",
  no_model: "no_model",
  no_critic: "no_critic",
  no_capo_masks: "no_capo_masks",
  non_finite_loss: "non_finite_loss",
  out_of_memory: "out_of_memory",
  rank_failed: "trainer_rank_failed",
  rank_mismatch: "trainer_rank_mismatch",
  internal: "trainer_internal",
  not_found: "invalid_model_dir",
  invalid_model: "invalid_model_config",
};

const DTYPE_OF: Record<WireDtype, (a: WireArray) => boolean> = {
  float32: (a) => a instanceof Float32Array,
  float64: (a) => a instanceof Float64Array,
  int32: (a) => a instanceof Int32Array,
  int64: (a) => a instanceof BigInt64Array,
  uint8: (a) => a instanceof Uint8Array,
};

/** The worker's rank flags (rank 0 of the layout: it starts this machine's other ranks itself). */
export function distributedArgs(d: DistributedOptions | undefined): string[] {
  if (!d || d.worldSize <= 1) return [];
  const args = ["--world-size", String(d.worldSize), "--rank", "0"];
  if (d.localRanks !== undefined) args.push("--local-ranks", String(d.localRanks));
  if (d.masterAddr !== undefined) args.push("--master-addr", d.masterAddr);
  if (d.masterPort !== undefined) args.push("--master-port", String(d.masterPort));
  return args;
}

/**
 * A request the op table does not allow is a client bug, not a worker failure: it is refused here, before the worker
 * could ignore a misspelt argument or frame.
 */
function checkRequest(op: string, args: unknown, frames: ReadonlyMap<string, WireArray> | undefined): void {
  const spec: WorkerOpSpec | undefined = Object.hasOwn(WORKER_OPS, op) ? WORKER_OPS[op as WorkerOp] : undefined;
  if (!spec) throw new InfraError("worker_protocol", `"${op}" is not a worker op (worker/harnessrl_worker/ops.json)`);
  const parsed = spec.args.safeParse(args);
  if (!parsed.success) throw new InfraError("worker_protocol", `${op}: arguments do not match the op table: ${parsed.error.issues.map((i) => `${i.path.join(".") || "args"}: ${i.message}`).join("; ")}`);
  const sent = frames ?? new Map<string, WireArray>();
  for (const [name, a] of sent) {
    const f = spec.framesIn[name];
    if (!f) throw new InfraError("worker_protocol", `${op}: frame "${name}" is not in the op table`);
    if (!DTYPE_OF[f.dtype](a)) throw new InfraError("worker_protocol", `${op}: frame "${name}" must be ${f.dtype}`);
  }
  for (const [name, f] of Object.entries(spec.framesIn)) {
    if (f.required && !sent.has(name)) throw new InfraError("worker_protocol", `${op}: frame "${name}" is required`);
  }
}

/**
 * One `python3 -m harnessrl_worker` process. Requests may be issued concurrently: each gets an id, the worker answers
 * them in order, and replies are matched by id. If the process dies, every pending and later request fails with a
 * retryable InfraError (`worker_died`); start a new client to continue.
 */
export class WorkerClient {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, Pending>();
  private readonly decoder = new MessageDecoder();
  private readonly stderrTail: string[] = [];
  private stderrPartial = "";
  private nextId = 1;
  private dead: HarnessRLError | null = null;
  private readonly exited: Promise<void>;
  private readonly defaultTimeoutMs: number;

  private constructor(options: WorkerClientOptions) {
    this.defaultTimeoutMs = options.requestTimeoutMs ?? 0;
    const python = options.python ?? pythonExecutable();
    const cwd = workerPackageDir();
    const args = ["-m", "harnessrl_worker"];
    if (options.device) args.push("--device", options.device);
    if (options.threads) args.push("--threads", String(options.threads));
    if (options.tokenBudget) args.push("--token-budget", String(options.tokenBudget));
    if (options.longRowTokens !== undefined) args.push("--long-row-tokens", String(options.longRowTokens));
    if (options.storedLogits) args.push("--stored-logits");
    if (options.fullLastLayer) args.push("--full-last-layer");
    if (options.autocast) args.push("--autocast", options.autocast);
    args.push(...distributedArgs(options.distributed));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PYTHONPATH: [cwd, process.env.PYTHONPATH].filter((p) => p).join(delimiter),
      OPENBLAS_NUM_THREADS: process.env.OPENBLAS_NUM_THREADS ?? "1",
      PYTHONDONTWRITEBYTECODE: "1",
      ...options.env,
    };
    this.child = spawn(python, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
    // The control plane may exit in the middle of an op (SIGTERM → process.exit in the CLI): the worker would only see
    // its stdin close once the op is done, minutes later for a large step. It must not outlive us.
    const child = this.child;
    const killOnExit = (): void => {
      killChild(child, "SIGKILL");
    };
    process.on("exit", killOnExit);
    child.once("close", () => process.off("exit", killOnExit));
    this.exited = new Promise((resolve) => {
      this.child.once("close", (code, signal) => {
        this.fail(new InfraError("worker_died", `trainer worker exited (${signal ?? `code ${code}`})${this.stderrSummary()}`, { retryable: true, details: { code, signal } }));
        resolve();
      });
      // A failed spawn may never emit "close".
      this.child.once("error", (e) => {
        this.fail(new InfraError("worker_spawn_failed", `cannot start the trainer worker with ${python}: ${errorMessage(e)} (set HARNESSRL_PYTHON to a Python with torch)`, { cause: e }));
        resolve();
      });
    });
    this.child.stdout?.on("data", (chunk: Buffer) => this.onStdout(chunk));
    this.child.stderr?.on("data", (chunk: Buffer) => this.onStderr(chunk, options.onStderr));
    // Writing to a worker that just died raises EPIPE on stdin; the close handler reports it.
    this.child.stdin?.on("error", () => undefined);
  }

  /** Starts a worker and checks that it speaks our protocol version; resolves with its `hello` result. */
  static async start(options: WorkerClientOptions = {}): Promise<{ client: WorkerClient; hello: Record<string, unknown> }> {
    const client = new WorkerClient(options);
    try {
      const { result } = await client.request("hello", {}, undefined, { timeoutMs: 120_000 });
      if (result.protocol !== WORKER_PROTOCOL_VERSION) {
        throw new InfraError("worker_protocol", `trainer worker speaks protocol ${String(result.protocol)}, this client ${WORKER_PROTOCOL_VERSION}`);
      }
      return { client, hello: result };
    } catch (e) {
      await client.kill();
      throw e;
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.dead === null;
  }

  /** Sends one request; `op`, `args` and frames must match the op table (worker-ops.ts), checked before sending. */
  request<K extends WorkerOp>(op: K, args: WorkerArgs<K>, frames?: ReadonlyMap<string, WireArray>, options: RequestOptions = {}): Promise<WorkerReply> {
    if (this.dead) return Promise.reject(this.dead);
    try {
      checkRequest(op, args, frames);
    } catch (e) {
      return Promise.reject(e instanceof InfraError ? e : new InfraError("worker_protocol", errorMessage(e)));
    }
    const id = this.nextId++;
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    return new Promise<WorkerReply>((resolve, reject) => {
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              const err = new InfraError("worker_timeout", `trainer worker did not answer ${op} within ${timeoutMs} ms; the worker was stopped`, { retryable: true });
              this.fail(err);
              killChild(this.child, "SIGKILL");
            }, timeoutMs)
          : undefined;
      this.pending.set(id, { op, resolve, reject, timer });
      // Consecutive synchronous writes keep each message contiguous on the pipe.
      for (const buf of encodeMessage({ id, op, args }, frames)) this.child.stdin?.write(buf);
    });
  }

  /** Asks the worker to stop and waits for it; kills it if it does not exit within `graceMs`. */
  async close(graceMs = 10_000): Promise<void> {
    if (this.dead === null) {
      try {
        await this.request("shutdown", {}, undefined, { timeoutMs: graceMs });
      } catch {
        // Already dying; the exit wait below settles it.
      }
      this.child.stdin?.end();
    }
    const timer = setTimeout(() => killChild(this.child, "SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** Stops the worker immediately (pending requests fail with worker_died). */
  async kill(): Promise<void> {
    killChild(this.child, "SIGKILL");
    await this.exited;
  }

  private onStdout(chunk: Buffer): void {
    let messages: WireMessage[];
    try {
      messages = this.decoder.push(chunk);
    } catch (e) {
      // A corrupt stream cannot be resynchronised: stop the worker, fail everything.
      this.fail(e instanceof InfraError ? e : new InfraError("worker_protocol", errorMessage(e)));
      killChild(this.child, "SIGKILL");
      return;
    }
    for (const m of messages) this.dispatch(m);
  }

  private dispatch(m: WireMessage): void {
    const id = m.header.id;
    const p = typeof id === "number" ? this.pending.get(id) : undefined;
    if (!p) {
      // An id-less error means the worker could not parse something we sent: a client bug, surface it loudly.
      this.stderrTail.push(`[client] unmatched worker message: ${JSON.stringify(m.header).slice(0, 300)}`);
      return;
    }
    this.pending.delete(id as number);
    if (p.timer) clearTimeout(p.timer);
    if (m.header.ok === true) {
      const result = m.header.result;
      p.resolve({ result: typeof result === "object" && result !== null ? (result as Record<string, unknown>) : {}, frames: m.frames });
      return;
    }
    const err = (m.header.error ?? {}) as { code?: unknown; message?: unknown; retryable?: unknown };
    const wire = typeof err.code === "string" ? err.code : "";
    const code = (Object.hasOwn(WORKER_ERROR_CODES, wire) ? WORKER_ERROR_CODES[wire] : undefined) ?? "trainer_failed";
    const message = `trainer worker ${p.op}: ${typeof err.message === "string" ? err.message : "failed"}`;
    // User-fault codes (a model directory that does not fit) are never retryable; the worker decides for its own.
    p.reject(errorOfCode(code, message, { retryable: err.retryable === true, details: { workerCode: wire } }));
  }

  private onStderr(chunk: Buffer, sink: ((line: string) => void) | undefined): void {
    const lines = (this.stderrPartial + chunk.toString("utf8")).split("\n");
    this.stderrPartial = lines.pop() ?? "";
    for (const line of lines) {
      sink?.(line);
      this.stderrTail.push(line);
      if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
    }
  }

  private stderrSummary(): string {
    const tail = [...this.stderrTail, this.stderrPartial].filter((l) => l.trim()).slice(-8);
    return tail.length > 0 ? `; stderr:\n${tail.join("\n")}` : "";
  }

  private fail(error: HarnessRLError): void {
    if (this.dead === null) this.dead = error;
    for (const [id, p] of this.pending) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(error);
      this.pending.delete(id);
    }
  }
}
