import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { chown } from "node:fs/promises";
import { delimiter, dirname, join } from "node:path";
import { InfraError, UserError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import { HostBridge } from "../bridge-host.js";
import type { Launcher } from "../launcher/client.js";
import type { SandboxDirs } from "../base-sandbox.js";
import { SandboxCgroup } from "../cgroups.js";
import type { CgroupLayout } from "../cgroups.js";
import { onExitCleanup } from "../../core/exit-cleanup.js";
import { ownerIdentity, removeDir, rewriteStateSync, writeStateSync } from "../state.js";
import type { SandboxState } from "../state.js";
import { chownTree } from "../workspace.js";
import type { Owner } from "../workspace.js";
import type { SandboxLimits } from "../types.js";
import { AgentProcess } from "./agent-process.js";
import { writeMountOwnerSync } from "./mount-root.js";
import type { AgentLaunch } from "./agent-process.js";
import { IN_SANDBOX, mountArgs } from "./mounts.js";
import type { MountPlan } from "./mounts.js";

/** What every bwrap sandbox of one backend shares. */
export interface BwrapContext {
  bwrap: string;
  /** Unprivileged host user the sandbox runs as (a root control plane drops to it with setpriv), if any. */
  runAs: { owner: Owner; setpriv: string } | undefined;
  layout: CgroupLayout;
  mounts: MountPlan;
  stateRoot: string;
  /**
   * Where each sandbox's bound directories live (`<mountRoot>/<32 hex>/`): a neutral path, since a bind mount's source
   * shows in the sandbox's /proc/self/mountinfo (see backend.ts, mountRootFor).
   */
  mountRoot: string;
  /** The exec agent's compiled modules (name → code), copied into each sandbox's mount directory. */
  agentFiles: Map<string, Buffer>;
  /** The compiled seccomp filter (seccomp.ts), handed to every bwrap on fd 3. */
  seccomp: Buffer;
  /** Starts each sandbox's launch chain (launcher/client.ts). */
  launcher: Launcher;
}

export const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** PATH inside: the usual system directories, plus the host node's directory when it lives elsewhere. */
export function sandboxPath(): string {
  const nodeDir = dirname(process.execPath);
  return DEFAULT_PATH.split(delimiter).includes(nodeDir) ? DEFAULT_PATH : `${DEFAULT_PATH}${delimiter}${nodeDir}`;
}

/**
 * The agent's share of the sandbox's cgroup, added on top of the caller's limits so commands get what was asked for.
 * Processes: the outer bwrap, bwrap's init and the agent's threads (4–5 with the flags below). Memory: the agent's
 * private memory (~7 MB anonymous, plus what it charges while streaming output).
 */
export const AGENT_RESERVE = { pids: 8, memoryBytes: 32 * 1024 * 1024 };

/** Joins every cgroup hierarchy before exec'ing bwrap, so nothing in the sandbox ever runs outside its limits. */
const CGROUP_WRAPPER =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || { echo "harnessrl-sandbox: cannot join cgroup $1" >&2; exit 126; }; shift; n=$((n-1)); done; exec "$@"';

/**
 * A small heap and one V8 worker: the agent only shuffles bytes, and its threads count against the pids limit.
 * --expose-gc: it collects relayed output buffers itself (see the agent).
 */
const AGENT_NODE_FLAGS = ["--max-old-space-size=32", "--max-semi-space-size=1", "--v8-pool-size=1", "--expose-gc"];

/** How long a starting agent may take to report (node startup on a loaded machine takes up to a second or so). */
const AGENT_START_TIMEOUT_MS = 30_000;

export function withReserve(limits: SandboxLimits): SandboxLimits {
  return { ...limits, memoryBytes: limits.memoryBytes + AGENT_RESERVE.memoryBytes, maxPids: limits.maxPids + AGENT_RESERVE.pids };
}

export interface CellSpec {
  readOnlyPaths: string[];
  /** Limits as the caller gave them (the agent's reserve is added here). */
  limits: SandboxLimits;
  labels: Record<string, string>;
  /** Create the cpu cgroup even without a weight (pooled cells learn theirs at acquire). */
  withCpu: boolean;
}

/**
 * The host-side resources of one bwrap sandbox, whether handed out yet or waiting in the warm pool: its state
 * directory (state.json, workspace, HOME, bridge socket directory), its cgroups, and its long-lived bwrap with the exec
 * agent inside. If the agent dies (the OOM killer, a cgroup-wide kill, a command's SIGKILL), the next `agent()` call
 * starts a new one in the same cgroups and mounts.
 */
export class Cell {
  readonly dirs: SandboxDirs;
  /** Neutral directory of everything bound into the sandbox (workspace, HOME, bridge, agent code). */
  readonly mountDir: string;
  readonly bridgeDir: string;
  private readonly agentDir: string;
  /** Host end of the proxy bridge; forwards only while the sandbox's owner sets a target. */
  bridge: HostBridge | undefined;
  private current: AgentProcess | undefined;
  private proxyPort: number | undefined;
  private closed = false;
  /** The kill sweep in progress (killAll), if any: no new agent starts until it is over. */
  private killing: Promise<void> | undefined;
  private unregisterExit: () => void = () => undefined;

  private constructor(
    private readonly ctx: BwrapContext,
    readonly id: string,
    readonly readOnlyPaths: string[],
    readonly cgroup: SandboxCgroup,
  ) {
    this.mountDir = join(ctx.mountRoot, randomBytes(16).toString("hex"));
    const stateDir = join(ctx.stateRoot, id);
    this.dirs = { stateDir, workspaceDir: join(this.mountDir, "workspace"), homeDir: join(this.mountDir, "home") };
    this.bridgeDir = join(this.mountDir, "bridge");
    this.agentDir = join(this.mountDir, "agent");
  }

  get owner(): Owner | undefined {
    return this.ctx.runAs?.owner;
  }

  /**
   * Creates the state directory, state.json (first: the reaper finds the cgroups through it after a crash), the
   * cgroups, and starts the agent without waiting for it (`agent()` does), so callers can seed the workspace meanwhile.
   */
  static async create(ctx: BwrapContext, spec: CellSpec): Promise<Cell> {
    const id = newId("sbx");
    const cell = new Cell(ctx, id, spec.readOnlyPaths, SandboxCgroup.forSandbox(ctx.layout, id, spec.withCpu));
    try {
      const { workspaceDir, homeDir } = cell.dirs;
      const socket = join(cell.bridgeDir, "proxy.sock");
      if (Buffer.byteLength(socket) > 100) throw new InfraError("sandbox_root_too_long", `sandbox mount root is too deep for a unix socket path: ${cell.mountDir}`);
      // The exit cleanup first, then the directories synchronously: a SIGTERM's process.exit (e.g. while the pool
      // refills) then finds either nothing on disk or everything its cleanup removes, never a directory still being
      // created in the thread pool. state.json comes first in the directory: a control plane SIGKILLed mid-create
      // leaves a directory the next reaper can attribute at once instead of after the half-created grace.
      cell.unregisterExit = onExitCleanup(() => cell.teardownSync());
      writeStateSync(cell.dirs.stateDir, cell.state(spec.labels));
      mkdirSync(cell.mountDir, { mode: 0o711 });
      writeMountOwnerSync(cell.mountDir);
      mkdirSync(workspaceDir);
      mkdirSync(homeDir);
      mkdirSync(cell.bridgeDir);
      // The agent's code, copied: binding dist/sandbox/agent would name the project's path in mountinfo.
      mkdirSync(cell.agentDir);
      for (const [name, code] of ctx.agentFiles) writeFileSync(join(cell.agentDir, name), code, { mode: 0o644 });
      cell.cgroup.create(withReserve(spec.limits));
      cell.current = cell.spawnAgent();
      // The socket exists from the start, so a pooled sandbox only has to be told its proxy.
      cell.bridge = await HostBridge.listen(socket);
      if (cell.owner) {
        await chown(socket, cell.owner.uid, cell.owner.gid);
        await chownTree(workspaceDir, cell.owner);
        await chownTree(homeDir, cell.owner);
      }
    } catch (e) {
      await cell.destroy().catch(() => undefined);
      throw e;
    }
    return cell;
  }

  private state(labels: Record<string, string>): SandboxState {
    return { id: this.id, backend: "bwrap", ...ownerIdentity(), createdAt: new Date().toISOString(), cgroups: this.cgroup.paths, labels, mountDir: this.mountDir };
  }

  /** A pooled cell handed out: its state.json gets the sandbox's labels (and creation time). */
  relabel(labels: Record<string, string>): void {
    rewriteStateSync(this.dirs.stateDir, this.state(labels));
  }

  private launch(): AgentLaunch {
    const mounts = mountArgs(this.ctx.mounts, { workspaceDir: this.dirs.workspaceDir, homeDir: this.dirs.homeDir, bridgeDir: this.bridgeDir, agentDir: this.agentDir, readOnlyPaths: this.readOnlyPaths });
    const bwrapArgs = [
      "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox", "--seccomp", "3",
      ...mounts, "--", process.execPath, ...AGENT_NODE_FLAGS, IN_SANDBOX.agentMain, IN_SANDBOX.bridgeSocket,
      // Unused by the agent: names the sandbox in the host's process list (its paths no longer do).
      this.id,
    ];
    const runAs = this.ctx.runAs;
    // Join the cgroups first (as root where we are root), then drop to the sandbox user, then become bwrap.
    const launch = runAs
      ? [runAs.setpriv, "--reuid", String(runAs.owner.uid), "--regid", String(runAs.owner.gid), "--clear-groups", this.ctx.bwrap, ...bwrapArgs]
      : [this.ctx.bwrap, ...bwrapArgs];
    const procs = this.cgroup.procsFiles();
    const [file = "", ...args] = procs.length > 0 ? ["/bin/sh", "-c", CGROUP_WRAPPER, "harnessrl-cgroup", String(procs.length), ...procs, ...launch] : launch;
    // The agent's own environment (commands get theirs per exec); one libuv thread: it never uses the thread pool.
    return { file, args, cwd: this.dirs.workspaceDir, env: { PATH: sandboxPath(), LANG: "C.UTF-8", UV_THREADPOOL_SIZE: "1" }, fd3: this.ctx.seccomp };
  }

  private spawnAgent(): AgentProcess {
    const agent = AgentProcess.start(this.ctx.launcher, this.launch());
    if (this.proxyPort !== undefined) agent.setProxy({ port: this.proxyPort }); // queued in the pipe until it reads
    return agent;
  }

  /** The running agent, started anew if the previous one died. */
  async agent(): Promise<AgentProcess> {
    if (this.closed) throw new UserError("sandbox_destroyed", `sandbox ${this.id} is being destroyed`);
    // A kill sweep still draining the cgroup would take a new agent with the old one (under load the next exec
    // started its agent while a timed-out exec's sweep ran, and that agent died "before it started").
    while (this.killing) await this.killing;
    if (this.closed) throw new UserError("sandbox_destroyed", `sandbox ${this.id} is being destroyed`);
    let agent = this.current;
    if (!agent?.alive) agent = this.current = this.spawnAgent();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        agent.kill();
        reject(new InfraError("sandbox_agent", `sandbox exec agent did not start within ${AGENT_START_TIMEOUT_MS} ms`, { retryable: true }));
      }, AGENT_START_TIMEOUT_MS);
    });
    try {
      await Promise.race([agent.ready, timeout]);
    } catch (e) {
      if (e instanceof InfraError && e.code === "sandbox_agent") {
        const stderr = (await agent.exited).diagnostics;
        if (stderr.startsWith("harnessrl-sandbox: cannot join cgroup")) throw new InfraError("sandbox_cgroup", stderr.trim(), { retryable: true });
      }
      throw e;
    } finally {
      clearTimeout(timer);
    }
    return agent;
  }

  /** The agent if one is running or starting (no restart). */
  get runningAgent(): AgentProcess | undefined {
    return this.current?.alive ? this.current : undefined;
  }

  setProxyPort(port: number): void {
    this.proxyPort = port;
    this.current?.setProxy({ port });
  }

  /** Kills everything the sandbox runs, the agent included (the next `agent()` starts a new one). */
  async killAll(): Promise<void> {
    this.current?.kill();
    // Waits for an earlier sweep too, so that `killing` stands for every sweep still running.
    const sweep: Promise<void> = Promise.all([this.killing, this.cgroup.drain()]).then(
      () => undefined,
      () => undefined,
    );
    this.killing = sweep;
    try {
      await sweep;
    } finally {
      if (this.killing === sweep) this.killing = undefined;
    }
  }

  /** Kills everything and removes the cgroups and the state directory. Returns what could not be cleaned up. */
  async destroy(): Promise<string[]> {
    this.closed = true;
    await this.killAll();
    // Its pipes close once bwrap and everything inside are gone (bounded: without cgroups, SIGKILL is all we have).
    if (this.current) await Promise.race([this.current.exited, new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
    await this.cgroup.drain();
    await this.bridge?.close();
    const errors = this.cgroup.remove();
    await removeDir(this.mountDir);
    await removeDir(this.dirs.stateDir);
    this.unregisterExit();
    return errors;
  }

  /** Exit-hook variant: no awaiting possible. */
  teardownSync(): void {
    this.closed = true;
    this.current?.kill();
    this.cgroup.killAll(500);
    this.cgroup.remove(500);
    // Retries: an async destroy may be removing the same tree in the thread pool right now (ENOTEMPTY races).
    rmSync(this.mountDir, { recursive: true, force: true, maxRetries: 3, retryDelay: 10 });
    rmSync(this.dirs.stateDir, { recursive: true, force: true, maxRetries: 3, retryDelay: 10 });
  }
}
