import { createHash } from "node:crypto";
import { hostname } from "node:os";
import { join } from "node:path";
import { UnrecoverableError, Worker, type Job } from "bullmq";
import { Redis } from "ioredis";
import { InfraError, UserError, errorMessage, isHarnessRLError } from "../core/errors.js";
import { getHarness } from "../harness/registry.js";
import { DEFAULT_ROLLOUT_SETTINGS, runRollout, type RolloutSettings } from "../rollout/run-one.js";
import { RolloutStack } from "../rollout/stack.js";
import { collectRolloutBundle } from "../store/bundle.js";
import { openStore } from "../store/registry.js";
import type { IngestOutcome, RolloutBundle, RolloutIngest, Store } from "../store/types.js";
import type { RolloutResult } from "../tasks/rollout-result.js";
import { redisOptionsOf } from "./connection.js";
import { HEARTBEAT_PREFIX, writeHeartbeat, type NodeHeartbeat } from "./heartbeat.js";
import { nodeTakesMemory } from "./memory-fit.js";
import { ROLLOUT_QUEUE, parseRolloutJob, type RolloutJob, type RolloutJobReturn } from "./job.js";
import { BundleSpool } from "./spool.js";

export interface NodeOptions {
  /** The queue's Redis URL (with its password). */
  cluster: string;
  /** The central store (overrides the store the jobs name). */
  store?: string;
  /** Rollouts run at once. */
  capacity: number;
  nodeId: string;
  /** Local SQLite records (the capture proxy's hot path) and the spool of bundles waiting to ship. */
  workDir: string;
  sandbox: string;
  /**
   * The sandbox backend's state root (default: the backend's own). Also a testing hook: a root the node cannot
   * create makes every sandbox start fail, as on a broken sandbox host.
   */
  sandboxStateRoot?: string;
  /** How long a job's lock lasts without renewal: a killed node's jobs are retried about this long after it died. */
  lockMs?: number;
  heartbeatMs?: number;
  /** How often spooled bundles are tried again. */
  spoolRetryMs?: number;
  /** Infra errors in a row that mark the node unhealthy (it stops pulling jobs for `cooldownMs`). */
  unhealthyAfter?: number;
  cooldownMs?: number;
  /**
   * How long opening a rollout stack (engine, capture proxy, sandbox backend) may take before the job fails with the
   * retryable `cluster_setup_timeout` (default 300 000 ms): a sandbox host or engine that hangs would hold the job.
   */
  setupTimeoutMs?: number;
  /**
   * Slack on top of an attempt's own budgets (harness + verifier + settle) before it counts as wedged (default
   * 30 000 ms): a sandbox host whose commands never return would otherwise hold the job, its lock renewed, forever.
   */
  wedgeGraceMs?: number;
  /**
   * The most sandbox memory (MiB) a job may ask for here (`settings.memoryMb`); a job asking more fails for good with
   * `cluster_job_memory_over_cap` (not clamped: a rollout run under less memory than its run asked for would be
   * scored as if it had had it). Also caps the default that jobs without a limit get. Unset: no cap.
   */
  maxMemoryMb?: number;
  log?: (line: string) => void;
}

/**
 * The sandbox memory limit (bytes) a node gives a job asking `askedMb` (its `settings.memoryMb`) under the node's cap
 * `capMb`: what it asked for; without a request the rollout runner's default (2 GiB), lowered to the cap; null when
 * it asks for more than the cap (the node refuses the job rather than run it with less than its run asked for).
 */
export function jobMemoryBytes(askedMb: number | undefined, capMb: number | undefined): number | null {
  const MiB = 1024 * 1024;
  if (askedMb === undefined) {
    const dflt = DEFAULT_ROLLOUT_SETTINGS.limits.memoryBytes;
    return capMb === undefined ? dflt : Math.min(dflt, capMb * MiB);
  }
  return nodeTakesMemory(capMb, askedMb) ? askedMb * MiB : null;
}

function hasIngest(store: Store): store is Store & RolloutIngest {
  return typeof (store as Partial<RolloutIngest>).ingestRollout === "function";
}

/**
 * A rollout node: pulls rollout jobs from the queue, runs each in its own sandbox through its own capture proxy
 * (records on local SQLite), and ships the finished attempt whole to the central store. A job completes only once
 * its bundle has landed or sits safely in the local spool; infra failures throw, so the queue retries the job
 * (elsewhere, after backoff) and finally moves it to the failed set with the reason.
 */
export class RolloutNode {
  private readonly stacks = new Map<string, Promise<RolloutStack>>();
  /** Jobs holding each stack, by key: a stack none holds is closed once a job needs another one. */
  private readonly stackUsers = new Map<string, number>();
  private readonly stores = new Map<string, Store & RolloutIngest>();
  private readonly spool: BundleSpool;
  private readonly heartbeatClient: Redis;
  private worker: Worker | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private spoolTimer: NodeJS.Timeout | null = null;
  private active = 0;
  private completed = 0;
  private infraInARow = 0;
  private unhealthyUntil = 0;
  private flushing = false;
  private readonly startedAt = Date.now();
  private readonly log: (line: string) => void;

  constructor(private readonly o: NodeOptions) {
    this.spool = new BundleSpool(join(o.workDir, "spool"));
    this.heartbeatClient = new Redis(redisOptionsOf(o.cluster));
    this.heartbeatClient.on("error", () => undefined);
    this.log = o.log ?? ((line) => process.stderr.write(`[node ${o.nodeId}] ${line}\n`));
  }

  get lockMs(): number {
    return this.o.lockMs ?? 10_000;
  }

  /** Starts pulling jobs, the heartbeat and the spool's retry loop. */
  async start(): Promise<void> {
    const worker = new Worker(ROLLOUT_QUEUE, (job, token) => this.process(job, token), {
      connection: redisOptionsOf(this.o.cluster, "worker"),
      concurrency: this.o.capacity,
      name: this.o.nodeId,
      lockDuration: this.lockMs,
      // Stalled jobs (their node died: the lock expired) go back to wait; twice and the job fails for good.
      stalledInterval: this.lockMs,
      maxStalledCount: 2,
      autorun: false,
    });
    worker.on("error", (e) => this.log(`queue: ${errorMessage(e)}`));
    this.worker = worker;
    void worker.run();
    await worker.waitUntilReady();
    await this.beat();
    const hb = this.o.heartbeatMs ?? 2000;
    this.heartbeatTimer = setInterval(() => void this.beat(), hb);
    this.spoolTimer = setInterval(() => void this.flushSpool(), this.o.spoolRetryMs ?? 5000);
    this.log(`ready: capacity ${this.o.capacity}, ${this.o.maxMemoryMb === undefined ? "no memory cap" : `memory cap ${this.o.maxMemoryMb} MiB`}, queue ${ROLLOUT_QUEUE}`);
  }

  private healthy(): boolean {
    return Date.now() >= this.unhealthyUntil;
  }

  private async beat(): Promise<void> {
    const hb: NodeHeartbeat = { nodeId: this.o.nodeId, host: hostname(), capacity: this.o.capacity, active: this.active, healthy: this.healthy(), spooled: this.spool.size, completed: this.completed, startedAt: this.startedAt, at: Date.now(), maxMemoryMb: this.o.maxMemoryMb ?? null };
    await writeHeartbeat(this.heartbeatClient, hb, 3 * (this.o.heartbeatMs ?? 2000)).catch(() => undefined);
  }

  /**
   * The stack a job runs on, held until {@link releaseStack}. Stacks are keyed by engine spec and sampling: a vLLM or
   * SGLang job's spec names its policy version (its client stamps calls with it), so each version of a run gets its
   * own stack, and the stacks of earlier versions are closed once no job holds them.
   */
  private acquireStack(job: RolloutJob): { key: string; stack: Promise<RolloutStack> } {
    const key = createHash("sha256").update(JSON.stringify([job.engine, job.sampling])).digest("hex").slice(0, 16);
    this.stackUsers.set(key, (this.stackUsers.get(key) ?? 0) + 1);
    let s = this.stacks.get(key);
    if (!s) {
      for (const [k, idle] of this.stacks) {
        if ((this.stackUsers.get(k) ?? 0) > 0) continue;
        this.stacks.delete(k);
        void idle.then((st) => st.close()).catch(() => undefined);
      }
      const opening = RolloutStack.open({ engine: job.engine, store: `sqlite:${join(this.o.workDir, `records-${key}.sqlite`)}`, sandbox: this.o.sandbox, sampling: job.sampling, sandboxPool: this.o.capacity, hidePaths: [this.o.workDir], ...(this.o.sandboxStateRoot === undefined ? {} : { sandboxStateRoot: this.o.sandboxStateRoot }) });
      const ms = this.o.setupTimeoutMs ?? 300_000;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new InfraError("cluster_setup_timeout", `node ${this.o.nodeId}: the rollout stack (engine, capture proxy, sandbox backend ${this.o.sandbox}) did not open within ${ms} ms`)), ms);
      });
      s = Promise.race([opening, late]).finally(() => clearTimeout(timer));
      s.catch(() => {
        this.stacks.delete(key);
        // A stack that opens after its job gave up on it would leak its proxy and sandboxes: close it then.
        opening.then((st) => st.close()).catch(() => undefined);
      });
      this.stacks.set(key, s);
    }
    return { key, stack: s };
  }

  private releaseStack(key: string): void {
    const n = (this.stackUsers.get(key) ?? 1) - 1;
    if (n > 0) this.stackUsers.set(key, n);
    else this.stackUsers.delete(key);
  }

  private storeFor(spec: string): Store & RolloutIngest {
    let s = this.stores.get(spec);
    if (!s) {
      const opened = openStore(spec);
      if (!hasIngest(opened)) {
        opened.close();
        throw new InfraError("cluster_store_no_ingest", `store ${opened.kind} cannot take shipped rollouts (use the run's central store: postgres or sqlite)`);
      }
      s = opened;
      this.stores.set(spec, s);
    }
    return s;
  }

  private noteInfra(wedged: boolean): void {
    this.infraInARow++;
    if (wedged || this.infraInARow >= (this.o.unhealthyAfter ?? 3)) {
      const cooldown = this.o.cooldownMs ?? 30_000;
      this.unhealthyUntil = Date.now() + cooldown;
      this.log(`unhealthy for ${cooldown} ms (${wedged ? "a rollout wedged" : `${this.infraInARow} infra errors in a row`}): not pulling jobs`);
      const w = this.worker;
      if (w) {
        // Stop fetching (jobs in flight go on); resume when the cooldown is over.
        w.pause(true).catch(() => undefined);
        setTimeout(() => {
          if (!this.draining) w.resume();
          void this.beat();
        }, cooldown).unref();
      }
      void this.beat();
    }
  }

  private draining = false;

  /**
   * The sandbox memory limit (bytes) of a job: its own `memoryMb`, else the runner's default (lowered to the cap).
   * Over the cap: a user error that no retry fixes, so the job goes to the failed set at once (UnrecoverableError)
   * with the code leading its reason. It fails before any setup and does not count against the node's health.
   */
  private memoryBytesOf(job: RolloutJob): number {
    const bytes = jobMemoryBytes(job.settings.memoryMb, this.o.maxMemoryMb);
    if (bytes !== null) return bytes;
    const e = new UserError("cluster_job_memory_over_cap", `rollout ${job.rolloutId} asks for ${job.settings.memoryMb} MiB of sandbox memory; node ${this.o.nodeId} allows at most ${this.o.maxMemoryMb} MiB (--max-memory-mb)`);
    this.log(`refused ${job.rolloutId}: ${e.message}`);
    throw new UnrecoverableError(`${e.code}: ${e.message}`);
  }

  /**
   * The job's payload, validated. A malformed payload is the producer's error and the same on every node: it goes to
   * the failed set at once (UnrecoverableError, the code leading its reason) instead of through every retry.
   */
  private parse(bullJob: Job): RolloutJob {
    try {
      return parseRolloutJob(bullJob.data);
    } catch (e) {
      if (!isHarnessRLError(e) || e.code !== "invalid_cluster_job") throw e;
      this.log(`refused job ${bullJob.id ?? "?"}: ${e.message}`);
      throw new UnrecoverableError(`${e.code}: ${e.message}`);
    }
  }

  private async process(bullJob: Job, token: string | undefined): Promise<RolloutJobReturn> {
    const job = this.parse(bullJob);
    const memoryBytes = this.memoryBytesOf(job);
    // Started attempts count stalls too (a node that died mid-attempt), so every attempt has its own number.
    const attempt = Math.max(1, bullJob.attemptsStarted, bullJob.attemptsMade + 1);
    this.active++;
    const t0 = performance.now();
    let held: string | undefined;
    try {
      let stack: RolloutStack;
      try {
        const acquired = this.acquireStack(job);
        held = acquired.key;
        stack = await acquired.stack;
      } catch (e) {
        // The node's own machinery (sandbox host, proxy) cannot start: as much an infra error of this node as a
        // rollout that ends in one; the queue retries the job, elsewhere or after backoff.
        this.noteInfra(false);
        throw e;
      }
      const before = new Set(stack.store.listSessions({ rolloutId: job.rolloutId }).map((s) => s.sessionId));
      stack.assign(job.rolloutId, job.task);
      const def = getHarness(job.harness);
      await def.ensureInstalled();
      const setupMs = performance.now() - t0;
      const { memoryMb: _memoryMb, ...asked } = job.settings;
      const settings: RolloutSettings = { ...DEFAULT_ROLLOUT_SETTINGS, ...asked, limits: { ...DEFAULT_ROLLOUT_SETTINGS.limits, memoryBytes } };
      // A wedged sandbox host would hold the job (its lock renewed) forever: bound the attempt as a whole.
      const budget = settings.harnessTimeoutMs + settings.verifierTimeoutMs + settings.settle.timeoutMs + (this.o.wedgeGraceMs ?? 30_000);
      let timer: NodeJS.Timeout | undefined;
      const wedged = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new InfraError("cluster_rollout_wedged", `rollout ${job.rolloutId} did not end within ${budget} ms on node ${this.o.nodeId}`)), budget);
      });
      let result: RolloutResult;
      const r0 = performance.now();
      try {
        result = await Promise.race([runRollout({ rolloutId: job.rolloutId, taskId: job.task.id, harness: job.harness, sample: job.sample }, job.task, def, stack.backend, stack.rolloutProxy, settings), wedged]);
      } catch (e) {
        this.noteInfra(true);
        throw e;
      } finally {
        clearTimeout(timer);
      }
      const rolloutMs = performance.now() - r0;
      // Stopped mid-rollout (SIGTERM kills a node's sandboxes at once): whatever the attempt recorded is not a whole
      // rollout; hand the job back to the queue instead of shipping it.
      if (this.draining) throw new InfraError("cluster_node_draining", `node ${this.o.nodeId} stopped during ${job.rolloutId}; attempt ${attempt} is not shipped`);
      if (result.status === "infra_error") {
        this.noteInfra(false);
        throw new InfraError("cluster_rollout_infra", `rollout ${job.rolloutId} on node ${this.o.nodeId}: ${result.error ?? "infra error"}`);
      }
      this.infraInARow = 0;
      // Only this attempt's sessions: an earlier attempt on this node recorded under the same rollout id.
      const bundle = collectRolloutBundle(stack.store, job.rolloutId, { attempt, nodeId: this.o.nodeId, result: result as unknown as Record<string, unknown>, earlier: before });
      result.sessionIds = bundle.sessions.map((s) => s.sessionId);
      result.calls = bundle.calls.length;
      // Ship only while we still hold the job: a node cut off past its lock lost the job to another node.
      if (token && (await bullJob.extendLock(token, this.lockMs)) === 0) throw new InfraError("cluster_lock_lost", `node ${this.o.nodeId} lost the lock of ${job.rolloutId}; not shipping attempt ${attempt}`);
      const s0 = performance.now();
      const delivery = await this.ship(bundle, this.o.store ?? job.store);
      const shipMs = performance.now() - s0;
      this.completed++;
      return { result, delivery, attempt, nodeId: this.o.nodeId, timing: { rolloutMs, shipMs, jobMs: performance.now() - t0, setupMs } };
    } catch (e) {
      // The queue keeps only the message as the failed reason: lead it with the code, so the failed set and the
      // dropped result name the catalogue's entry.
      if (isHarnessRLError(e) && !e.message.startsWith(`${e.code}:`)) e.message = `${e.code}: ${e.message}`;
      throw e;
    } finally {
      if (held !== undefined) this.releaseStack(held);
      this.active--;
    }
  }

  /** The async landing where the store offers it: a synchronous one would stall lock renewals while it waits. */
  private land(spec: string, bundle: RolloutBundle): Promise<IngestOutcome> {
    const store = this.storeFor(spec);
    return store.ingestRolloutAsync ? store.ingestRolloutAsync(bundle) : Promise.resolve().then(() => store.ingestRollout(bundle));
  }

  /** Lands a bundle in the central store, or spools it when the store is unreachable for now. */
  private async ship(bundle: RolloutBundle, storeSpec: string | null): Promise<RolloutJobReturn["delivery"]> {
    if (!storeSpec) throw new InfraError("cluster_store_not_found", "neither the node (--store) nor the job names the central store");
    try {
      const outcome = await this.land(storeSpec, bundle);
      return outcome.status === "inserted" ? "landed" : "duplicate";
    } catch (e) {
      if (!isHarnessRLError(e) || !e.retryable) throw e;
      this.spool.put(bundle, storeSpec);
      this.log(`store unreachable (${e.code}); spooled ${bundle.rolloutId} attempt ${bundle.attempt}`);
      return "spooled";
    }
  }

  /** Tries every spooled bundle once; keeps those the store still cannot take. */
  async flushSpool(): Promise<number> {
    if (this.flushing) return 0;
    this.flushing = true;
    let shipped = 0;
    try {
      for (const { file, store: spec, bundle } of this.spool.list()) {
        if (!bundle || !spec) continue;
        try {
          await this.land(spec, bundle);
          this.spool.remove(file);
          shipped++;
        } catch (e) {
          if (isHarnessRLError(e) && e.retryable) break;
          this.log(`spooled ${bundle.rolloutId} cannot be shipped: ${errorMessage(e)}`);
          break;
        }
      }
      if (shipped > 0) this.log(`shipped ${shipped} spooled rollout(s)`);
    } finally {
      this.flushing = false;
    }
    return shipped;
  }

  /**
   * Marks the node as stopping: attempts that end from now on are handed back to the queue, not shipped (a signal
   * has already killed their sandboxes). Synchronous, so a signal handler can call it before anything else runs.
   */
  stopping(): void {
    this.draining = true;
  }

  /** Stops pulling jobs, waits for the running ones, ships what it can from the spool, and closes everything. */
  async drain(): Promise<void> {
    this.draining = true;
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (this.spoolTimer) clearInterval(this.spoolTimer);
    await this.worker?.close();
    await this.flushSpool();
    await this.heartbeatClient.del(`${HEARTBEAT_PREFIX}${this.o.nodeId}`).catch(() => undefined);
    this.heartbeatClient.disconnect();
    for (const s of this.stacks.values()) await (await s.catch(() => null))?.close();
    for (const s of this.stores.values()) s.close();
  }
}
