import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { InfraError, UserError, isHarnessRLError } from "../core/errors.js";
import { ClusterDispatcher, type GatheredRollout } from "../cluster/dispatch.js";
import type { RolloutJob } from "../cluster/job.js";
import { memoryFitWarning } from "../cluster/memory-fit.js";
import { jobsOfPlan, resultOfGathered, runIdOf } from "../cluster/plan.js";
import { createEngine } from "../engine/registry.js";
import { formatEngineSpec, parseEngineSpec } from "../engine/spec.js";
import { isHotSwappable, type HotSwappableEngine } from "../engine/types.js";
import type { RolloutPlan } from "../rollout/runner.js";
import { openStore } from "../store/registry.js";
import type { LandedRollout, RolloutIngest, Store } from "../store/types.js";
import { rolloutResultSchema, type RolloutResult } from "../tasks/rollout-result.js";
import type { RunContext } from "../run/context.js";
import { clusterEndpointIssue, jobEngineSpec, ownEndpoint, trainerClientSpec } from "./cluster-endpoints.js";
import type { RunConfig } from "./config.js";

/**
 * `train` with a `cluster:` section (docs/cluster.md, Training on a cluster): each RL step's plan goes to the queue
 * as rollout jobs, rollout nodes run them against the served policy, and the step trains from the central store on
 * the rollouts that landed there, whole and once. The orchestrator keeps its loop; this file is the cluster's side.
 */

/** Why a run config cannot train on a cluster, or null. Checked before any work (and by `train --check`). */
export function clusterTrainingIssue(config: RunConfig): string | null {
  const c = config.cluster;
  if (!c) return null;
  const endpoints = clusterEndpointIssue(config);
  if (endpoints) return endpoints;
  // Nodes ship to the store from their own processes (and machines): an in-memory store is nobody else's.
  if (/^memory(:|$)/.test(c.store.trim())) return "cluster.store is memory; rollout nodes ship to it from other processes: use postgres://… or sqlite:<path> that every node reaches";
  return null;
}

/** Throws `unsupported_cluster_run` when the config's cluster section cannot train (see {@link clusterTrainingIssue}). */
export function checkClusterTraining(config: RunConfig): void {
  const why = clusterTrainingIssue(config);
  if (why) throw new UserError("unsupported_cluster_run", `${why} (docs/cluster.md, Training on a cluster)`);
}

/** The run's identity on the queue: stable across resumes of one run directory, new for a run started afresh in it. */
const clusterRunSchema = z.strictObject({ runId: z.string().regex(/^[A-Za-z0-9._-]+$/), key: z.string().regex(/^[a-f0-9]{8}$/) });
type ClusterRun = z.infer<typeof clusterRunSchema>;
const CLUSTER_RUN_FILE = "cluster-run.json";

function clusterRunOf(ctx: RunContext): ClusterRun {
  const path = ctx.run.path(CLUSTER_RUN_FILE);
  if (existsSync(path)) {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(path, "utf8"));
    } catch {
      raw = undefined; // a torn or edited file: the run gets a new identity (its earlier jobs are not this run's)
    }
    const r = clusterRunSchema.safeParse(raw);
    if (r.success) return r.data;
  }
  // A key of this run's own: rollout ids (and so job ids and the central store's landing keys) never meet those of
  // an earlier run in the same directory or of another run shipping to the same store.
  const key = randomBytes(4).toString("hex");
  const run = { runId: `${runIdOf(ctx.run.root)}-${key}`, key };
  ctx.run.writeJson(CLUSTER_RUN_FILE, run);
  return run;
}

export interface ClusterStepsOptions {
  /** How long a step waits for completed rollouts that a node spooled (central store unreachable) to land. */
  landingWaitMs?: number;
  /** How long a step waits for its jobs (default 1 h); jobs still pending then are dropped. */
  dispatchTimeoutMs?: number;
}

/** Where one trainable rollout came from (for the step's metrics and the staleness check). */
interface Provenance {
  nodeId: string;
  attempt: number;
  jobVersion: number;
}

function hasIngest(store: Store): store is Store & RolloutIngest {
  return typeof (store as Partial<RolloutIngest>).ingestRollout === "function";
}

function dropped(r: RolloutResult, why: string): RolloutResult {
  return { ...r, status: "infra_error", score: 0, verifier: null, error: why };
}

/**
 * The cluster's part of a training run: dispatching a step's rollouts, gathering them from the central store, and
 * keeping every engine endpoint on the policy version a step samples.
 */
export class ClusterSteps {
  /** Landed rollouts of this run not yet taken by a step, by rollout id (read incrementally by `landed_at`). */
  private readonly landed = new Map<string, LandedRollout>();
  private cursor = Number.MIN_SAFE_INTEGER;
  private readonly provenance = new Map<string, Provenance>();
  private readonly ownId: RegExp;

  private constructor(
    private readonly config: RunConfig,
    private readonly dispatcher: ClusterDispatcher,
    private readonly central: Store & RolloutIngest,
    private readonly identity: ClusterRun,
    /** Job engine specs, round-robin over the plan. */
    private readonly endpoints: string[],
    /** The run's engine and the other endpoints' clients: each serves the version a step's jobs sample. */
    private readonly served: HotSwappableEngine[],
    private readonly owned: HotSwappableEngine[],
    private readonly options: ClusterStepsOptions,
    private readonly log: (line: string) => void,
  ) {
    this.ownId = new RegExp(`^s(\\d+)-${identity.key}-`);
  }

  /**
   * Connects to the queue and the central store (created and migrated here, before nodes open it concurrently) and to
   * the endpoints in `cluster.engines` other than the run's own engine, each made to serve the policy in `policyDir`.
   */
  static async open(ctx: RunContext, engine: HotSwappableEngine, policyDir: string, log: (line: string) => void, options: ClusterStepsOptions = {}): Promise<ClusterSteps> {
    const { config } = ctx;
    checkClusterTraining(config);
    const c = config.cluster!;
    const central = openStore(c.store);
    if (!hasIngest(central)) {
      central.close();
      throw new InfraError("cluster_store_no_ingest", `cluster.store ${c.store.replace(/:\/\/[^@/]*@/, "://…@")} cannot take shipped rollouts (use postgres://… or sqlite:<path> that every node reaches)`);
    }
    const own = ownEndpoint(config);
    const endpoints = c.engines ?? [own];
    const owned: HotSwappableEngine[] = [];
    let dispatcher: ClusterDispatcher | null = null;
    try {
      const url = (spec: string): string => parseEngineSpec(spec).target.replace(/\/+$/, "");
      const others = [...new Set(endpoints.map(url))].filter((u) => u !== url(own));
      for (const target of others) {
        const client = trainerClientSpec(endpoints.find((e) => url(e) === target)!, policyDir);
        const e = await createEngine(client, { codec: ctx.policy.codec });
        if (!isHotSwappable(e)) {
          await e.close();
          throw new UserError("unsupported_cluster_run", `cluster endpoint ${formatEngineSpec(client)} cannot switch policies`);
        }
        owned.push(e);
      }
      dispatcher = await ClusterDispatcher.open(c.queue);
      const nodes = await dispatcher.nodes();
      const identity = clusterRunOf(ctx);
      log(`cluster: run ${identity.runId} on ${c.queue.replace(/\/\/[^@/]*@/, "//…@")}, ${nodes.length} node(s) up now (${nodes.reduce((s, n) => s + n.capacity, 0)} slots), ${endpoints.length} engine endpoint(s), central store ${central.kind}`);
      // Every job carries rollout.memory_mb; a node capped below it fails each job it takes for good. Said, not refused:
      // nodes may join (or restart with another cap) before the jobs are taken.
      const misfit = memoryFitWarning(nodes, config.rollout.memory_mb);
      if (misfit) log(`cluster: ${misfit}`);
      return new ClusterSteps(config, dispatcher, central, identity, endpoints, [engine, ...owned], owned, options, log);
    } catch (e) {
      await dispatcher?.close();
      for (const o of owned) await o.close().catch(() => undefined);
      central.close();
      throw e;
    }
  }

  /** The central store the steps train from: only whole, landed rollouts are in it. */
  get store(): Store {
    return this.central;
  }

  /** Rollout id prefix of a step: deterministic (a resumed run re-adds the same jobs) and this run's own. */
  idPrefix(step: number): string {
    return `s${step}-${this.identity.key}`;
  }

  /** Makes every endpoint serve `version` (a no-op for those that already do). */
  async publish(policyDir: string, version: number): Promise<void> {
    await Promise.all(this.served.map(async (e) => (e.policyVersion === version ? undefined : e.loadPolicy(policyDir, version))));
  }

  /**
   * One step's rollouts on the cluster: the endpoints serve `version` first, then the plan's jobs are added (ids
   * deterministic: re-adding after a restart finds the same jobs, finished or not) and gathered in plan order. A
   * completed rollout's result is the one that *landed* in the central store (the attempt whose records train); one
   * that failed every attempt, or whose records did not land in time, comes back as an `infra_error` saying why.
   */
  async launch(plan: RolloutPlan, version: number, policyDir: string): Promise<RolloutResult[]> {
    await this.publish(policyDir, version);
    const jobs = this.jobsOf(plan, version);
    const gathered = await this.dispatch(jobs);
    const completed = gathered.filter((g) => g.outcome === "completed").map((g) => g.rolloutId);
    await this.awaitLanding(completed, Number(/^s(\d+)-/.exec(plan.idPrefix)?.[1] ?? 0));
    const failed: string[] = [];
    const results = jobs.map((job, i): RolloutResult => {
      const g = gathered[i]!;
      if (g.outcome === "failed") {
        failed.push(`${job.rolloutId}: ${g.reason.slice(0, 200)}`);
        return resultOfGathered(job, g);
      }
      const row = this.landed.get(job.rolloutId);
      this.landed.delete(job.rolloutId);
      const base = resultOfGathered(job, g);
      if (!row) return dropped(base, `not landed: completed on node ${g.ret.nodeId} (delivery ${g.ret.delivery}) but its records did not reach the central store in time`);
      // What trains is what landed: the landed attempt's result (another attempt may also have finished, differently).
      const r = rolloutResultSchema.safeParse(row.result);
      if (!r.success || r.data.rolloutId !== job.rolloutId || r.data.taskId !== job.task.id || r.data.harness !== job.harness || r.data.sample !== job.sample) {
        return dropped(base, `the landed result of ${job.rolloutId} (attempt ${row.attempt}, node ${row.nodeId}) does not validate or is another rollout's`);
      }
      this.provenance.set(job.rolloutId, { nodeId: row.nodeId, attempt: row.attempt, jobVersion: version });
      return r.data;
    });
    if (failed.length) this.log(`cluster: ${failed.length} rollout job(s) of ${plan.idPrefix} failed on every attempt and were dropped (queue's failed set): ${failed.slice(0, 5).join("; ")}`);
    return results;
  }

  /**
   * A held-out evaluation's rollouts on the nodes, sampling `version` (served first). Its results are the nodes'
   * answers, validated against their jobs when gathered: nothing trains on them, so they are not read back from the
   * central store (where they land as any rollout does, under ids no step takes). Ids are deterministic per run and
   * label: an evaluation interrupted and run again gathers the jobs that already finished.
   */
  async evaluate(plan: Omit<RolloutPlan, "idPrefix">, label: string, version: number, policyDir: string, onResult?: (done: number) => void): Promise<RolloutResult[]> {
    await this.publish(policyDir, version);
    const jobs = this.jobsOf({ ...plan, idPrefix: `${label}-${this.identity.key}` }, version);
    const gathered = await this.dispatch(jobs, onResult);
    const failed = gathered.filter((g) => g.outcome === "failed").length;
    if (failed) this.log(`cluster: ${failed} evaluation job(s) of ${label} failed on every attempt (counted as infra errors)`);
    return jobs.map((job, i) => resultOfGathered(job, gathered[i]!));
  }

  /** The plan's jobs at `version`, their engines round-robin over the endpoints. */
  private jobsOf(plan: RolloutPlan, version: number): RolloutJob[] {
    const s = this.config.sampling;
    // The sandbox memory limit travels with the job: the node applies it as a single-machine run would.
    const settings = { maxTurns: this.config.rollout.max_turns, maxTokens: s.max_tokens, harnessTimeoutMs: this.config.rollout.timeout_s * 1000, memoryMb: this.config.rollout.memory_mb };
    return jobsOfPlan(plan, { runId: this.identity.runId, engine: this.endpoints[0]!, store: this.config.cluster!.store, policyVersion: version, sampling: { temperature: s.temperature, maxTokens: s.max_tokens, ...(s.top_k > 0 ? { topK: s.top_k } : {}) }, settings }).map((j, i): RolloutJob => ({ ...j, engine: jobEngineSpec(this.endpoints[i % this.endpoints.length]!, version) }));
  }

  private dispatch(jobs: readonly RolloutJob[], onResult?: (done: number) => void): Promise<GatheredRollout[]> {
    return this.dispatcher.run(jobs, { attempts: this.config.cluster!.attempts, ...(this.options.dispatchTimeoutMs === undefined ? {} : { timeoutMs: this.options.dispatchTimeoutMs }), ...(onResult ? { onGathered: (_g: GatheredRollout, done: number) => onResult(done) } : {}) });
  }

  /**
   * Reads newly landed rollouts of this run until every id in `ids` has landed or the wait is over. Rows of steps
   * before `step` are not kept (a resumed run reads the store from its start; those steps are committed).
   */
  private async awaitLanding(ids: readonly string[], step: number): Promise<void> {
    const deadline = Date.now() + (this.options.landingWaitMs ?? 300_000);
    for (const id of this.landed.keys()) if (Number(this.ownId.exec(id)?.[1] ?? 0) < step) this.landed.delete(id);
    for (let i = 0; i < 100_000; i++) {
      try {
        for (let page = 0; page < 10_000; page++) {
          const rows = this.central.listLandedRollouts({ afterLandedAt: this.cursor, limit: 2000 });
          for (const row of rows) {
            const own = this.ownId.exec(row.rolloutId);
            if (own && Number(own[1]) >= step) this.landed.set(row.rolloutId, row);
          }
          if (rows.length > 0) this.cursor = rows[rows.length - 1]!.landedAt;
          if (rows.length < 2000) break;
        }
      } catch (e) {
        // The central store away for a while (nodes spool meanwhile): keep waiting, within the deadline.
        if (!isHarnessRLError(e) || !e.retryable) throw e;
      }
      const missing = ids.filter((id) => !this.landed.has(id));
      if (missing.length === 0 || Date.now() >= deadline) {
        if (missing.length) this.log(`cluster: ${missing.length} completed rollout(s) not landed in the central store after ${Math.round((this.options.landingWaitMs ?? 300_000) / 1000)} s (spooled on their node): dropped from this step`);
        return;
      }
      await sleep(Math.min(1000, Math.max(0, deadline - Date.now())));
    }
  }

  /**
   * The step's rollouts as they may train with `currentVersion` being trained: a rollout with any call sampled more
   * than `max_staleness` versions behind (by the versions its records carry, not the job's: a node samples whatever
   * the endpoint serves when the call is made) is dropped and counted. Returns the cluster's metrics for the step.
   */
  admit(results: readonly RolloutResult[], currentVersion: number): { results: RolloutResult[]; metrics: Record<string, number> } {
    const nodes = new Set<string>();
    let stale = 0;
    let offVersion = 0;
    let retried = 0;
    let minVersion = Number.POSITIVE_INFINITY;
    const out = results.map((r) => {
      const p = this.provenance.get(r.rolloutId);
      this.provenance.delete(r.rolloutId);
      if (r.status === "infra_error" || !p) return r;
      const versions = this.central.listCalls({ rolloutId: r.rolloutId }).flatMap((call) => (call.policyVersion === null ? [] : [call.policyVersion]));
      offVersion += versions.filter((v) => v !== p.jobVersion).length;
      const oldest = Math.min(...versions);
      if (versions.length && currentVersion - oldest > this.config.max_staleness) {
        stale++;
        return dropped(r, `stale: a call was sampled by policy v${oldest}, ${currentVersion - oldest} versions behind v${currentVersion} (max_staleness ${this.config.max_staleness})`);
      }
      if (versions.length) minVersion = Math.min(minVersion, oldest);
      nodes.add(p.nodeId);
      if (p.attempt > 1) retried++;
      return r;
    });
    const failed = results.filter((r) => r.status === "infra_error" && r.error?.startsWith("cluster_job_failed")).length;
    const notLanded = results.filter((r) => r.status === "infra_error" && r.error?.startsWith("not landed")).length;
    if (stale) this.log(`cluster: ${stale} rollout(s) sampled more than max_staleness ${this.config.max_staleness} versions behind v${currentVersion} dropped`);
    return {
      results: out,
      metrics: {
        "cluster/nodes": nodes.size,
        "cluster/failed_jobs": failed,
        "cluster/not_landed": notLanded,
        "cluster/stale_dropped": stale,
        "cluster/retried": retried,
        "cluster/calls_off_job_version": offVersion,
        ...(Number.isFinite(minVersion) ? { "cluster/oldest_call_version": minVersion } : {}),
      },
    };
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
    for (const e of this.owned) await e.close().catch(() => undefined);
    this.central.close();
  }
}
