import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createNetnsTopology, type NetnsTopology } from "../../src/cluster/netns.js";
import { startRedisServer, type RedisServerHandle } from "../../src/cluster/redis-server.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import { REPO_ROOT, type CliResult } from "../setup/cli.js";
import { killChild } from "../../src/core/kill-child.js";

/**
 * A whole cluster on this machine for the fault tests: Redis in the control plane's network namespace, N rollout
 * nodes (the compiled CLI) each in its own namespace reaching it over veth, and the dispatching command run inside
 * the control plane's namespace. The central store is a SQLite file (the file system is shared; the queue is not).
 */
export interface NodeProc {
  readonly id: string;
  readonly dir: string;
  proc: ChildProcess;
  log: string;
}

export interface NetnsCluster {
  topo: NetnsTopology;
  redis: RedisServerHandle;
  url: string;
  nodes: NodeProc[];
  startNode(i: number): NodeProc;
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  /** Runs the CLI inside the control plane's namespace; bounded by `timeoutMs`. */
  cli(args: string[], timeoutMs?: number): Promise<CliResult>;
  /** SIGKILLs the CLI commands running now (the control plane dies mid-run). */
  killCli(): void;
  /**
   * Starts a long-running CLI command (e.g. `serve`) in the control plane's namespace with extra environment; resolves
   * once its output matches `ready` (rejects if it exits first or after `timeoutMs`). Stopped by `close()`.
   */
  service(args: string[], env: Record<string, string>, ready: RegExp, timeoutMs?: number): Promise<{ proc: ChildProcess; output: () => string }>;
  close(): Promise<void>;
}

const CLI = join(REPO_ROOT, "dist", "cli", "main.js");

function exited(p: ChildProcess): Promise<void> {
  return p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once("exit", () => r()));
}

export async function startNetnsCluster(root: string, n: number, nodeArgs: string[] = []): Promise<NetnsCluster> {
  const topo = createNetnsTopology(n);
  let redis: RedisServerHandle | undefined;
  const nodes: NodeProc[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  try {
    redis = await startRedisServer({ dir: join(root, "redis"), host: topo.cpAddress, port: 6379, netns: topo.cp });
    const url = redis.url;
    const startNode = (i: number): NodeProc => {
      const id = `node${i}`;
      const dir = join(root, id);
      const argv = [...topo.exec(topo.nodes[i]!.ns), process.execPath, CLI, "node", "--node-id", id, "--capacity", "2", "--dir", dir, "--lock-ms", "3000", "--heartbeat-ms", "500", ...nodeArgs];
      // `ip netns exec` execs the command: the child's pid is the node's.
      const proc = spawn(argv[0]!, argv.slice(1), { cwd: REPO_ROOT, env: { ...process.env, HARNESSRL_CLUSTER: url }, stdio: ["ignore", "pipe", "pipe"] });
      const node: NodeProc = { id, dir, proc, log: "" };
      const keep = (d: Buffer): void => {
        node.log = (node.log + d.toString()).slice(-20_000);
      };
      proc.stdout?.on("data", keep);
      proc.stderr?.on("data", keep);
      nodes[i] = node;
      return node;
    };
    for (let i = 0; i < n; i++) startNode(i);
    const kill = async (i: number, signal: NodeJS.Signals = "SIGKILL"): Promise<void> => {
      const p = nodes[i]?.proc;
      if (!p) return;
      killChild(p, signal);
      await Promise.race([exited(p), sleep(20_000)]);
    };
    const running = new Set<ChildProcess>();
    const cli = (args: string[], timeoutMs = 240_000): Promise<CliResult> =>
      new Promise((resolve, reject) => {
        const argv = [...topo.exec(topo.cp), process.execPath, CLI, ...args];
        const child = spawn(argv[0]!, argv.slice(1), { cwd: REPO_ROOT, env: process.env });
        running.add(child);
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        const t = setTimeout(() => killChild(child, "SIGKILL"), timeoutMs);
        child.on("error", reject);
        child.on("close", (code) => {
          running.delete(child);
          clearTimeout(t);
          resolve({ code, stdout, stderr });
        });
      });
    const services: ChildProcess[] = [];
    const service = (args: string[], env: Record<string, string>, ready: RegExp, timeoutMs = 180_000): Promise<{ proc: ChildProcess; output: () => string }> =>
      new Promise((resolve, reject) => {
        const argv = [...topo.exec(topo.cp), process.execPath, CLI, ...args];
        const proc = spawn(argv[0]!, argv.slice(1), { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
        services.push(proc);
        let out = "";
        const t = setTimeout(() => reject(new Error(`${args[0]} not ready within ${timeoutMs} ms:\n${out}`)), timeoutMs);
        const watch = (d: Buffer): void => {
          out = (out + d.toString()).slice(-20_000);
          if (ready.test(out)) {
            clearTimeout(t);
            resolve({ proc, output: () => out });
          }
        };
        proc.stdout.on("data", watch);
        proc.stderr.on("data", watch);
        proc.once("exit", (code) => {
          clearTimeout(t);
          reject(new Error(`${args[0]} exited (${code}) before it was ready:\n${out}`));
        });
      });
    cleanups.push(async () => {
      for (const p of services) {
        killChild(p, "SIGTERM");
        await Promise.race([exited(p), sleep(15_000)]);
        killChild(p, "SIGKILL");
      }
    });
    const r = redis;
    return {
      topo,
      redis: r,
      url,
      nodes,
      startNode,
      kill,
      cli,
      killCli: () => {
        for (const c of running) killChild(c, "SIGKILL");
      },
      service,
      close: async () => {
        for (const c of running) killChild(c, "SIGKILL");
        for (let i = 0; i < nodes.length; i++) await kill(i, "SIGKILL");
        for (const c of cleanups) await c();
        await r.kill();
        topo.destroy();
      },
    };
  } catch (e) {
    for (const node of nodes) if (node) killChild(node.proc, "SIGKILL");
    await redis?.kill();
    topo.destroy();
    throw e;
  }
}

/** Rollouts landed in a central SQLite store. */
export function landed(storeFile: string): { rolloutId: string; attempt: number; nodeId: string }[] {
  if (!existsSync(storeFile)) return [];
  const s = new SqliteStore(storeFile);
  try {
    return s.listLandedRollouts().map(({ rolloutId, attempt, nodeId }) => ({ rolloutId, attempt, nodeId }));
  } finally {
    s.close();
  }
}

/** Session ids a node recorded locally for each rollout (its capture proxy's SQLite files). */
export function localSessions(nodeDir: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (!existsSync(nodeDir)) return out;
  for (const f of readdirSync(nodeDir).filter((n) => /^records-.*\.sqlite$/.test(n))) {
    let s: SqliteStore;
    try {
      s = new SqliteStore(join(nodeDir, f), { readonly: true });
    } catch {
      continue; // still being created by the node
    }
    try {
      for (const info of s.listSessions()) {
        if (!info.rolloutId) continue;
        out.set(info.rolloutId, [...(out.get(info.rolloutId) ?? []), info.sessionId]);
      }
    } finally {
      s.close();
    }
  }
  return out;
}
