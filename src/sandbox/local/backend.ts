import { mkdirSync, rmSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { newId } from "../../core/ids.js";
import { BaseSandbox, sandboxDirs, startOrDestroy } from "../base-sandbox.js";
import type { SandboxDirs } from "../base-sandbox.js";
import { onExitCleanup } from "../../core/exit-cleanup.js";
import { killProcessGroup, killReapedGroup } from "../../core/process-group.js";
import { validateCreateOptions } from "../options.js";
import type { ResolvedExec } from "../options.js";
import { reapOrphans } from "../reaper.js";
import { runProcess } from "../run-process.js";
import { defaultStateRoot, killBySandboxId, ownerIdentity, processesWithSandboxId, removeDir, writeStateSync } from "../state.js";
import { seedWorkspace } from "../workspace.js";
import type { ExecResult, ReapReport, Sandbox, SandboxBackend, SandboxBackendOptions, SandboxCreateOptions, SandboxPaths } from "../types.js";

/**
 * UNSAFE development backend: same contract, no isolation. Commands run as the current user directly on the host in a
 * temporary workspace, reach the network freely, and are not memory/pid limited. Timeouts and cleanup kill the
 * command's process group (a process that calls setsid() escapes it; destroy and the reaper also hunt processes by
 * their HARNESSRL_SANDBOX_ID environment marker).
 */
const WARNING =
  "harnessrl: the `local-unsafe` sandbox backend provides NO isolation (no filesystem, network, memory or process limits). Use it for development only; use `bwrap` for real rollouts.";
let warned = false;


class LocalSandbox extends BaseSandbox {
  readonly backend = "local-unsafe";
  readonly paths: SandboxPaths;
  readonly proxyUrl: string | undefined;
  private readonly groups = new Set<number>(); // leaders not reaped yet: their pids still name their groups
  private readonly running = new Set<Promise<unknown>>();
  private unregisterExit: () => void = () => undefined;

  constructor(
    id: string,
    dirs: SandboxDirs,
    private readonly options: SandboxCreateOptions,
    private readonly onGone: (s: LocalSandbox) => void,
  ) {
    super(id, dirs, options.limits.wallClockMs);
    this.paths = { workspace: dirs.workspaceDir, home: dirs.homeDir };
    const proxy = options.network?.proxy;
    this.proxyUrl = proxy ? `http://${proxy.host.includes(":") ? `[${proxy.host}]` : proxy.host}:${proxy.port}` : undefined;
  }

  async start(): Promise<void> {
    // The exit cleanup first, then the directories synchronously (see writeStateSync): a signal never leaves one behind.
    this.unregisterExit = onExitCleanup(() => this.teardownSync());
    for (const dir of [this.workspaceDir, this.homeDir, join(this.stateDir, "tmp"), join(this.stateDir, "services")]) mkdirSync(dir, { recursive: true });
    writeStateSync(this.stateDir, { id: this.id, backend: this.backend, ...ownerIdentity(), createdAt: new Date().toISOString(), cgroups: {}, labels: this.options.labels ?? {} });
    await seedWorkspace(this.workspaceDir, this.options.workspaceFiles);
  }

  protected serviceDir(): { host: string; inside: string } {
    const dir = join(this.stateDir, "services");
    return { host: dir, inside: dir };
  }

  protected async runExec(exec: ResolvedExec, timeoutMs: number): Promise<ExecResult> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: this.homeDir, LANG: "C.UTF-8", TMPDIR: join(this.stateDir, "tmp"), TERM: "dumb",
      ...this.options.env, ...exec.env, HARNESSRL_SANDBOX_ID: this.id,
    };
    if (this.proxyUrl && exec.proxy) env.HARNESSRL_PROXY_URL = this.proxyUrl;
    const cwd = exec.cwd === undefined ? this.workspaceDir : isAbsolute(exec.cwd) ? exec.cwd : resolve(this.workspaceDir, exec.cwd);
    const [file, ...args] = exec.argv as [string, ...string[]];
    const run = runProcess(
      { file, args, cwd, env, stdin: exec.stdin, timeoutMs, stdoutLimit: exec.stdoutLimit, stderrLimit: exec.stderrLimit, detached: true },
      {
        onSpawn: (pid) => this.groups.add(pid),
        // At the timeout the leader is alive, so its pid still names our group; once it has exited (background
        // stragglers end with it) the group is killed once, guarded against a recycled pid, and forgotten.
        killTree: (pid, reason) => {
          if (reason === "timeout") return killProcessGroup(pid);
          this.groups.delete(pid);
          killReapedGroup(pid);
        },
      },
    );
    this.running.add(run);
    try {
      const r = await run;
      return {
        exitCode: r.exitCode, signal: r.signal, stdout: r.stdout.text(), stderr: r.stderr.text(),
        stdoutTruncated: r.stdout.truncated, stderrTruncated: r.stderr.truncated, stdoutBytes: r.stdout.total, stderrBytes: r.stderr.total,
        timedOut: r.timedOut, oomKilled: false, durationMs: r.durationMs,
      };
    } finally {
      this.running.delete(run);
    }
  }

  private killEverything(): void {
    for (const g of this.groups) killProcessGroup(g);
    for (const pid of processesWithSandboxId(this.id)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
  }

  protected async teardown(): Promise<void> {
    this.killEverything();
    await Promise.allSettled([...this.running]);
    this.killEverything();
    await killBySandboxId(this.id);
    await removeDir(this.stateDir);
    this.unregisterExit();
    this.onGone(this);
  }

  private teardownSync(): void {
    this.killEverything();
    rmSync(this.stateDir, { recursive: true, force: true, maxRetries: 3, retryDelay: 10 }); // an async destroy may race it
  }
}

export class LocalUnsafeBackend implements SandboxBackend {
  readonly name = "local-unsafe";
  readonly unsafe = true;
  private readonly sandboxes = new Set<LocalSandbox>();

  private constructor(private readonly stateRoot: string) {}

  static async open(options: SandboxBackendOptions = {}): Promise<LocalUnsafeBackend> {
    if (!warned) {
      warned = true;
      console.warn(WARNING);
    }
    const stateRoot = resolve(options.stateRoot ?? defaultStateRoot());
    await mkdir(stateRoot, { recursive: true });
    return new LocalUnsafeBackend(stateRoot);
  }

  async create(options: SandboxCreateOptions): Promise<Sandbox> {
    validateCreateOptions(options);
    const id = newId("sbx");
    const sandbox = new LocalSandbox(id, sandboxDirs(join(this.stateRoot, id)), options, (s) => this.sandboxes.delete(s));
    this.sandboxes.add(sandbox);
    return startOrDestroy(sandbox);
  }

  reapOrphans(): Promise<ReapReport> {
    return reapOrphans(this.stateRoot);
  }

  live(): Sandbox[] {
    return [...this.sandboxes];
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.sandboxes].map((s) => s.destroy()));
  }
}
