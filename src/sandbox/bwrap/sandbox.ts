import { posix } from "node:path";
import { InfraError, errorMessage } from "../../core/errors.js";
import { BaseSandbox } from "../base-sandbox.js";
import { BoundedOutput } from "../bounded-output.js";
import { DEFAULT_DISK_BYTES, DISK_POLL_BACKOFF, DISK_POLL_MS, fileSizeCapArgv } from "../disk-usage.js";
import { sharedDiskMeter } from "../disk-meter/client.js";
import type { ResolvedExec } from "../options.js";
import { chownTree, seedWorkspace } from "../workspace.js";
import type { ExecResult, SandboxCreateOptions, SandboxPaths } from "../types.js";
import type { AgentExit, AgentRun } from "./agent-process.js";
import { sandboxPath, withReserve } from "./cell.js";
import type { Cell } from "./cell.js";
import { IN_SANDBOX } from "./mounts.js";

/**
 * After a timeout the agent kills the exec's tree itself; if it has not reported within this long (stuck, or frozen
 * by memory pressure), the whole sandbox is killed, agent included (the next exec starts a new one).
 */
const KILL_FALLBACK_MS = 1500;

/** The agent's host process ended with 128+N: it was killed by signal N inside the sandbox (a command, or the OOM killer). */
function killedBySignal(exit: AgentExit): boolean {
  return exit.code !== null && exit.code > 128;
}

/**
 * A bwrap sandbox handed out by `create()`: a {@link Cell} (state directory, cgroups, long-lived bwrap + exec agent),
 * fresh or taken from the warm pool, plus what is specific to this caller: its limits, labels, workspace seed, env,
 * proxy bridge and wall-clock budget.
 */
export class BwrapSandbox extends BaseSandbox {
  readonly backend = "bwrap";
  readonly paths: SandboxPaths = { workspace: IN_SANDBOX.workspace, home: IN_SANDBOX.home };
  readonly proxyUrl: string | undefined;
  private readonly running = new Set<Promise<unknown>>();
  /** Running execs that use the proxy: the host bridge forwards only while there is one. */
  private proxyExecs = 0;
  /** Times the disk budget was exceeded (execs compare before/after); the watcher runs while execs do. */
  private diskHits = 0;
  private diskTimer: NodeJS.Timeout | undefined;
  private readonly diskBytes: number;
  /** What the last over-budget measurement found, for the killed exec's stderr. */
  private diskNote = "";

  constructor(
    readonly cell: Cell,
    private readonly options: SandboxCreateOptions,
    /** The cell comes from the warm pool: it still has the pool's labels and limits. */
    private readonly pooled: boolean,
    private readonly onGone: (s: BwrapSandbox) => void,
  ) {
    super(cell.id, cell.dirs, options.limits.wallClockMs);
    this.owner = cell.owner;
    const proxy = options.network?.proxy;
    this.proxyUrl = proxy ? `http://127.0.0.1:${proxy.port}` : undefined;
    this.diskBytes = options.limits.diskBytes ?? DEFAULT_DISK_BYTES;
  }

  /**
   * Measures workspace + HOME every DISK_POLL_MS while an exec runs; past the budget, every process of the sandbox is
   * killed (the running execs end with `diskLimitHit`). What was written stays until destroy() removes it.
   */
  /** Allocated bytes of the workspace and HOME (measured by the control plane's disk meter). */
  private diskUsed(): Promise<number> {
    return sharedDiskMeter().measure([this.workspaceDir, this.homeDir]);
  }

  private watchDisk(): void {
    if (this.diskTimer) return;
    let lastMs = 0;
    const tick = async (): Promise<void> => {
      const t = performance.now();
      const bytes = await this.diskUsed();
      lastMs = performance.now() - t;
      if (bytes > this.diskBytes && this.running.size > 0 && !this.destroyed) {
        this.diskHits++;
        this.diskNote = `${bytes} bytes`;
        await this.cell.killAll();
      }
    };
    const loop = (): void => {
      this.diskTimer = setTimeout(() => {
        void tick().finally(() => {
          if (this.running.size > 0 && !this.destroyed) loop();
          else this.diskTimer = undefined;
        });
      }, Math.max(DISK_POLL_MS, DISK_POLL_BACKOFF * lastMs));
    };
    loop();
  }

  async start(): Promise<void> {
    if (this.pooled) {
      this.cell.relabel(this.options.labels ?? {});
      try {
        this.cell.cgroup.setLimits(withReserve(this.options.limits));
      } catch (e) {
        throw new InfraError("sandbox_cgroup", `cannot apply the sandbox's limits: ${errorMessage(e)}`, { cause: e, retryable: true });
      }
    }
    await seedWorkspace(this.workspaceDir, this.options.workspaceFiles);
    if (this.owner && this.options.workspaceFiles !== undefined) await chownTree(this.workspaceDir, this.owner);
    const proxy = this.options.network?.proxy;
    if (proxy) this.cell.setProxyPort(proxy.port);
    await this.cell.agent(); // a cold cell's agent has been starting meanwhile
  }

  protected serviceDir(): { host: string; inside: string } {
    return { host: this.cell.bridgeDir, inside: IN_SANDBOX.bridgeDir };
  }

  private environment(extra: Record<string, string>, withProxy: boolean): Record<string, string> {
    const env: Record<string, string> = {
      PATH: sandboxPath(), HOME: IN_SANDBOX.home, USER: "sandbox", LOGNAME: "sandbox", LANG: "C.UTF-8", TMPDIR: "/tmp", TERM: "dumb",
      ...this.options.env, ...extra, HARNESSRL_SANDBOX_ID: this.id,
    };
    if (this.proxyUrl && withProxy) env.HARNESSRL_PROXY_URL = this.proxyUrl;
    return env;
  }

  protected async runExec(exec: ResolvedExec, timeoutMs: number): Promise<ExecResult> {
    const proxy = exec.proxy ? this.options.network?.proxy : undefined;
    const bridge = this.cell.bridge;
    if (proxy && bridge) {
      this.proxyExecs++;
      bridge.target = proxy;
    }
    const run = this.execOnce(exec, timeoutMs, proxy !== undefined);
    this.running.add(run);
    this.watchDisk();
    try {
      return await run;
    } finally {
      this.running.delete(run);
      if (proxy && bridge && --this.proxyExecs === 0) bridge.target = undefined;
    }
  }

  private killedResult(run: AgentRun | undefined, started: number, timedOut: boolean, oomKilled: boolean, pidsLimitHit: boolean | undefined): ExecResult {
    const stdout = run?.stdout ?? new BoundedOutput(0);
    const stderr = run?.stderr ?? new BoundedOutput(0);
    return {
      exitCode: null, signal: "SIGKILL", stdout: stdout.text(), stderr: stderr.text(), stdoutTruncated: stdout.truncated, stderrTruncated: stderr.truncated,
      stdoutBytes: stdout.total, stderrBytes: stderr.total, timedOut, oomKilled, pidsLimitHit, durationMs: performance.now() - started,
    };
  }

  private diskLimitResult(run: AgentRun | undefined, started: number, timedOut: boolean, oomKilled: boolean, pidsLimitHit: boolean | undefined): ExecResult {
    const r = this.killedResult(run, started, timedOut, oomKilled, pidsLimitHit);
    const note = `harnessrl-sandbox: the sandbox's workspace and HOME held ${this.diskNote}, over its disk budget of ${this.diskBytes} bytes; every process of the sandbox was killed\n`;
    return { ...r, stderr: `${r.stderr}${r.stderr ? "\n" : ""}${note}`, diskLimitHit: true };
  }

  private async execOnce(exec: ResolvedExec, timeoutMs: number, withProxy: boolean): Promise<ExecResult> {
    const started = performance.now();
    const cgroup = this.cell.cgroup;
    const before = cgroup.counters();
    const diskHitsBefore = this.diskHits;
    // Once over budget, the sandbox stays refused while it is (its files remain until destroy): no agent start.
    if (this.diskHits > 0) {
      if ((await this.diskUsed()) > this.diskBytes) return this.diskLimitResult(undefined, started, false, false, undefined);
    }
    let r: AgentRun;
    let timedOut = false;
    // Twice at most: an agent that died (killed from outside) before it started the command gets one successor.
    for (let attempt = 1; ; attempt++) {
      let agent;
      try {
        agent = await this.cell.agent(); // starts a new agent if the last one died
      } catch (e) {
        if (this.destroyed) return this.killedResult(undefined, started, false, false, undefined);
        if (this.diskHits > diskHitsBefore) return this.diskLimitResult(undefined, started, false, false, undefined);
        throw e;
      }
      const handle = agent.exec(
        { argv: fileSizeCapArgv(this.diskBytes, exec.argv), cwd: posix.resolve(IN_SANDBOX.workspace, exec.cwd ?? "."), env: this.environment(exec.env, withProxy), proxy: withProxy },
        exec.stdin,
        { stdout: exec.stdoutLimit, stderr: exec.stderrLimit },
      );
      let fallback: NodeJS.Timeout | undefined;
      const timer = setTimeout(() => {
        timedOut = true;
        handle.kill();
        fallback = setTimeout(() => void this.cell.killAll(), KILL_FALLBACK_MS);
      }, Math.max(0, timeoutMs - (performance.now() - started)));
      r = await handle.result;
      clearTimeout(timer);
      clearTimeout(fallback);
      if (r.exit || r.started || timedOut || this.destroyed || attempt >= 2) break;
    }
    const after = cgroup.counters();
    const oomKilled = after.oomKills > before.oomKills;
    const pidsLimitHit = cgroup.paths.pids ? after.pidsMaxHits > before.pidsMaxHits : undefined;
    if (r.error) throw new InfraError("sandbox_bridge", `harnessrl-sandbox: ${r.error.message}`, { retryable: true });
    if (this.diskHits > diskHitsBefore) return this.diskLimitResult(r, started, timedOut, oomKilled, pidsLimitHit);
    if (!r.exit) {
      // The agent's process ended during the exec, and every process of the sandbox with it.
      const died = r.agentExit;
      if (died && !timedOut && !this.destroyed) {
        // An agent that could not even start the command (twice) is an infrastructure failure. Once the command ran,
        // its end is the command's result: a sandboxed command can kill its agent or write garbage into the agent's
        // pipes (same user), and an infra error would excuse the rollout from its advantage estimate — a way for a
        // policy to turn a failing rollout into one that does not count.
        if (!r.started && !killedBySignal(died) && !oomKilled) {
          throw new InfraError("sandbox_agent", `sandbox exec agent died (exit ${died.code ?? died.signal}): ${died.diagnostics.trim()}`, { retryable: true });
        }
        const how = killedBySignal(died) ? `was killed (exit ${died.code})` : `ended (exit ${died.code ?? died.signal}: ${died.diagnostics.trim().split("\n").pop() ?? ""})`;
        r.stderr.push(Buffer.from(`\nharnessrl-sandbox: the sandbox's exec agent ${how} while this command ran; every process of the sandbox ended with it\n`));
      }
      return this.killedResult(r, started, timedOut, oomKilled, pidsLimitHit);
    }
    return {
      exitCode: r.exit.code, signal: r.exit.signal as NodeJS.Signals | null,
      stdout: r.stdout.text(), stderr: r.stderr.text(), stdoutTruncated: r.stdout.truncated, stderrTruncated: r.stderr.truncated,
      stdoutBytes: r.stdout.total, stderrBytes: r.stderr.total, timedOut, oomKilled, pidsLimitHit,
      durationMs: performance.now() - started,
    };
  }

  protected async teardown(): Promise<void> {
    await this.cell.killAll(); // running execs end now: their agent and namespace are gone
    await Promise.allSettled([...this.running.values()]);
    const errors = await this.cell.destroy();
    this.onGone(this);
    if (errors.length > 0) throw new InfraError("sandbox_cleanup", `sandbox ${this.id} cleanup incomplete: ${errors.join("; ")}`);
  }
}
