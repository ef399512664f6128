import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, rmSync } from "node:fs";
import { chmod, chown, mkdir, stat } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import { delimiter, dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { InfraError, UserError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import { BaseSandbox, sandboxDirs, startOrDestroy } from "../base-sandbox.js";
import type { SandboxDirs } from "../base-sandbox.js";
import { HostBridge } from "../bridge-host.js";
import { SandboxCgroup, detectCgroups, prepareParents } from "../cgroups.js";
import type { CgroupLayout } from "../cgroups.js";
import { onExitCleanup } from "../exit-cleanup.js";
import { validateCreateOptions } from "../options.js";
import type { ResolvedExec } from "../options.js";
import { reapOrphans } from "../reaper.js";
import { runProcess } from "../run-process.js";
import { defaultStateRoot, ownerIdentity, removeDir, writeState } from "../state.js";
import { chownTree, seedWorkspace } from "../workspace.js";
import type { Owner } from "../workspace.js";
import type { ExecResult, ReapReport, Sandbox, SandboxBackend, SandboxBackendOptions, SandboxCreateOptions, SandboxPaths } from "../types.js";
import { IN_SANDBOX, mountArgs, planNode, systemMountArgs } from "./mounts.js";
import type { MountPlan } from "./mounts.js";

/** Joins every cgroup hierarchy before exec'ing bwrap, so nothing in the sandbox ever runs outside its limits. */
const CGROUP_WRAPPER =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || { echo "harnessrl-sandbox: cannot join cgroup $1" >&2; exit 126; }; shift; n=$((n-1)); done; exec "$@"';

/** Inside the sandbox: start the proxy forwarder, wait for its readiness line, then become the command. */
const BRIDGE_WRAPPER = [
  "node=$1; port=$2; shift 2",
  `r=$("$node" --max-old-space-size=32 --v8-pool-size=0 ${IN_SANDBOX.forwarder} "$port" ${IN_SANDBOX.bridgeSocket} 3>&1 >/dev/null </dev/null &)`,
  'if [ "$r" != ready ]; then echo "harnessrl-sandbox: proxy forwarder did not start" >&2; exit 125; fi',
  'exec "$@"',
].join("\n");

const DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

function findExecutable(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? DEFAULT_PATH).split(delimiter)) {
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // keep looking
    }
  }
  return undefined;
}

/** The compiled forwarder next to this module, or in dist/ when this module runs from its TypeScript source (tests). */
function forwarderScript(): string | undefined {
  const here = fileURLToPath(new URL("../forwarder.js", import.meta.url));
  const fromSource = here.replace(`${sep}src${sep}sandbox${sep}`, `${sep}dist${sep}sandbox${sep}`);
  return [here, fromSource].find((p) => existsSync(p));
}

const signalNames = new Map<number, NodeJS.Signals>(
  Object.entries(osConstants.signals).map(([name, num]) => [num, name as NodeJS.Signals]),
);

interface BwrapContext {
  bwrap: string;
  /** Unprivileged host user the sandbox runs as (a root control plane drops to it with setpriv), if any. */
  runAs: { owner: Owner; setpriv: string } | undefined;
  layout: CgroupLayout;
  mounts: MountPlan;
  stateRoot: string;
}

class BwrapSandbox extends BaseSandbox {
  readonly backend = "bwrap";
  readonly paths: SandboxPaths = { workspace: IN_SANDBOX.workspace, home: IN_SANDBOX.home };
  readonly proxyUrl: string | undefined;
  private readonly running = new Set<Promise<unknown>>();
  /** Host pids of the processes we spawned for running execs (cgroup wrapper → setpriv → bwrap, one pid). */
  private readonly leaders = new Set<number>();
  private bridge: HostBridge | undefined;
  private unregisterExit: () => void = () => undefined;

  constructor(
    id: string,
    dirs: SandboxDirs,
    private readonly ctx: BwrapContext,
    private readonly options: SandboxCreateOptions,
    readonly cgroup: SandboxCgroup,
    private readonly onGone: (s: BwrapSandbox) => void,
  ) {
    super(id, dirs, options.limits.wallClockMs);
    const proxy = options.network?.proxy;
    this.proxyUrl = proxy ? `http://127.0.0.1:${proxy.port}` : undefined;
  }

  async start(): Promise<void> {
    const { stateDir, workspaceDir, homeDir } = this;
    await mkdir(workspaceDir, { recursive: true });
    await mkdir(homeDir, { recursive: true });
    await writeState(stateDir, { id: this.id, backend: this.backend, ...ownerIdentity(), createdAt: new Date().toISOString(), cgroups: this.cgroup.paths, labels: this.options.labels ?? {} });
    this.unregisterExit = onExitCleanup(() => this.teardownSync());
    this.cgroup.create(this.options.limits);
    await seedWorkspace(workspaceDir, this.options.workspaceFiles);
    this.owner = this.ctx.runAs?.owner;
    if (this.owner) {
      await chownTree(workspaceDir, this.owner);
      await chownTree(homeDir, this.owner);
    }
    const proxy = this.options.network?.proxy;
    if (proxy) {
      const socket = join(stateDir, "bridge", "proxy.sock");
      if (Buffer.byteLength(socket) > 100) throw new UserError("sandbox_root_too_long", `sandbox state root is too deep for a unix socket path: ${socket}`);
      await mkdir(dirname(socket));
      this.bridge = await HostBridge.listen(socket, proxy);
      if (this.owner) await chown(socket, this.owner.uid, this.owner.gid);
    }
  }

  private environment(extra: Record<string, string>, withProxy: boolean): Record<string, string> {
    const nodeDir = dirname(process.execPath);
    const path = DEFAULT_PATH.split(":").includes(nodeDir) ? DEFAULT_PATH : `${DEFAULT_PATH}:${nodeDir}`;
    const env: Record<string, string> = {
      PATH: path, HOME: IN_SANDBOX.home, USER: "sandbox", LOGNAME: "sandbox", LANG: "C.UTF-8", TMPDIR: "/tmp", TERM: "dumb",
      ...this.options.env, ...extra, HARNESSRL_SANDBOX_ID: this.id,
    };
    if (this.proxyUrl && withProxy) env.HARNESSRL_PROXY_URL = this.proxyUrl;
    return env;
  }

  protected async runExec(exec: ResolvedExec, timeoutMs: number): Promise<ExecResult> {
    const mounts = mountArgs(this.ctx.mounts, {
      workspaceDir: this.workspaceDir, homeDir: this.homeDir, readOnlyPaths: this.options.readOnlyPaths ?? [], cwd: exec.cwd ?? ".",
      bridgeDir: this.bridge && exec.proxy ? join(this.stateDir, "bridge") : undefined,
    });
    const proxy = exec.proxy ? this.options.network?.proxy : undefined;
    const command = proxy ? ["/bin/sh", "-c", BRIDGE_WRAPPER, "harnessrl-init", process.execPath, String(proxy.port), ...exec.argv] : exec.argv;
    const bwrapArgs = [
      "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox",
      ...mounts, "--", ...command,
    ];
    const procs = this.cgroup.procsFiles();
    const runAs = this.ctx.runAs;
    // Join the cgroups first (as root where we are root), then drop to the sandbox user, then become bwrap.
    const launch = runAs
      ? [runAs.setpriv, "--reuid", String(runAs.owner.uid), "--regid", String(runAs.owner.gid), "--clear-groups", this.ctx.bwrap, ...bwrapArgs]
      : [this.ctx.bwrap, ...bwrapArgs];
    const [file, ...args] = procs.length > 0 ? ["/bin/sh", "-c", CGROUP_WRAPPER, "harnessrl-cgroup", String(procs.length), ...procs, ...launch] : launch;
    if (file === undefined) throw new InfraError("sandbox_internal", "empty launch command");
    const before = this.cgroup.counters();
    const run = runProcess(
      { file, args, cwd: this.workspaceDir, env: this.environment(exec.env, exec.proxy), stdin: exec.stdin, timeoutMs, stdoutLimit: exec.stdoutLimit, stderrLimit: exec.stderrLimit, detached: false },
      {
        onSpawn: (pid) => this.leaders.add(pid),
        killTree: (pid, reason) => {
          if (reason !== "timeout") return; // the leader's exit already tore down its pid namespace
          try {
            process.kill(pid, "SIGKILL"); // bwrap's --die-with-parent takes the namespace's init, hence everything, with it
          } catch {
            // already gone
          }
          if (this.running.size <= 1) void this.cgroup.drain(); // and everything in the cgroup, right away
        },
      },
    );
    this.running.add(run);
    try {
      const r = await run;
      this.leaders.delete(r.pid);
      // The namespace died with its init; make sure the kernel has finished with every process before returning,
      // and catch anything a concurrent exec did not start (only when this is the sandbox's sole exec).
      if (this.running.size === 1) await this.cgroup.drain();
      const after = this.cgroup.counters();
      const stderr = r.stderr.text();
      if (r.exitCode === 126 && stderr.startsWith("harnessrl-sandbox: cannot join cgroup")) throw new InfraError("sandbox_cgroup", stderr.trim(), { retryable: true });
      if (r.exitCode === 125 && stderr.includes("harnessrl-sandbox: proxy forwarder did not start")) throw new InfraError("sandbox_bridge", stderr.trim(), { retryable: true });
      // bwrap exits 1 with "bwrap: execvp …" when the program cannot be run; report it as a shell would.
      const exitCode = r.exitCode === 1 && stderr.startsWith("bwrap: execvp") ? (stderr.includes("Permission denied") ? 126 : 127) : r.exitCode;
      const signal = r.signal ?? (r.exitCode !== null && r.exitCode > 128 ? signalNames.get(r.exitCode - 128) ?? null : null);
      return {
        exitCode, signal, stdout: r.stdout.text(), stderr, stdoutTruncated: r.stdout.truncated, stderrTruncated: r.stderr.truncated,
        stdoutBytes: r.stdout.total, stderrBytes: r.stderr.total, timedOut: r.timedOut,
        oomKilled: after.oomKills > before.oomKills,
        pidsLimitHit: this.cgroup.paths.pids ? after.pidsMaxHits > before.pidsMaxHits : undefined,
        durationMs: r.durationMs,
      };
    } finally {
      this.running.delete(run);
    }
  }

  protected async teardown(): Promise<void> {
    // An exec may still be joining its cgroup: kill our spawned leaders directly as well as the cgroup's members.
    for (const pid of this.leaders) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await this.cgroup.drain();
    await Promise.allSettled([...this.running.values()]);
    await this.cgroup.drain();
    await this.bridge?.close();
    const errors = this.cgroup.remove();
    await removeDir(this.stateDir);
    this.unregisterExit();
    this.onGone(this);
    if (errors.length > 0) throw new InfraError("sandbox_cleanup", `sandbox ${this.id} cleanup incomplete: ${errors.join("; ")}`);
  }

  /** Exit-hook variant: no awaiting possible. */
  private teardownSync(): void {
    for (const pid of this.leaders) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    this.cgroup.killAll(500);
    this.cgroup.remove(500);
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}

const warned = new Set<string>();
function warnOnce(message: string): void {
  if (warned.has(message)) return;
  warned.add(message);
  console.warn(message);
}

export interface BwrapBackendOptions extends SandboxBackendOptions {
  /**
   * Host user the sandboxed commands run as. Default: when the control plane runs as root, the unprivileged
   * `nobody` (65534:65534), so root-only host files stay unreadable inside; otherwise the invoking user.
   * "invoking-user" keeps the control plane's own uid (root stays root inside its user namespace, without capabilities).
   */
  runAs?: Owner | "invoking-user";
}

/** Decides the sandbox user and proves bwrap works as that user here (unprivileged user namespaces may be disabled). */
async function chooseSandboxUser(choice: BwrapBackendOptions["runAs"], bwrap: string, mounts: MountPlan, stateRoot: string, warnings: string[]): Promise<BwrapContext["runAs"]> {
  if (choice === "invoking-user") return undefined;
  const owner = choice ?? (process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined);
  if (!owner) return undefined;
  const setpriv = findExecutable("setpriv");
  if (!setpriv) {
    warnings.push("setpriv (util-linux) not found: sandboxes run as the control plane's own user");
    return undefined;
  }
  // The sandbox user must be able to traverse the state root (mkdtemp makes 0700 directories).
  const st = await stat(stateRoot);
  if ((st.mode & 0o001) === 0) await chmod(stateRoot, (st.mode & 0o7777) | 0o711);
  const probeMounts = [...mounts.systemArgs, "--proc", "/proc", "--dev", "/dev", "--ro-bind", stateRoot, "/run/state", "--ro-bind", mounts.forwarderHostPath, "/run/forwarder.js"];
  if (mounts.nodePrefix) probeMounts.push("--ro-bind", mounts.nodePrefix, mounts.nodePrefix);
  const probe = spawnSync(setpriv, ["--reuid", String(owner.uid), "--regid", String(owner.gid), "--clear-groups", bwrap, "--unshare-all", "--die-with-parent", ...probeMounts, "--", "true"], { encoding: "utf8", timeout: 30_000 });
  if (probe.status !== 0) {
    warnings.push(`bwrap cannot run as uid ${owner.uid} here (${(probe.stderr || probe.error?.message || "").trim()}): sandboxes run as the control plane's own user`);
    return undefined;
  }
  return { owner, setpriv };
}

export class BwrapBackend implements SandboxBackend {
  readonly name = "bwrap";
  readonly unsafe = false;
  private readonly sandboxes = new Set<BwrapSandbox>();

  private constructor(
    private readonly ctx: BwrapContext,
    readonly warnings: string[],
  ) {}

  static async open(options: BwrapBackendOptions = {}): Promise<BwrapBackend> {
    const bwrap = findExecutable("bwrap");
    if (!bwrap) throw new InfraError("sandbox_no_bwrap", "bubblewrap (bwrap) is not installed: run `npm run setup` or `apt-get install bubblewrap`");
    const layout = detectCgroups();
    const warnings = [...layout.warnings, ...prepareParents(layout)];
    const stateRoot = resolve(options.stateRoot ?? defaultStateRoot());
    await mkdir(stateRoot, { recursive: true });
    const system = systemMountArgs();
    const forwarderHostPath = forwarderScript();
    if (!forwarderHostPath) throw new InfraError("sandbox_no_forwarder", "the proxy forwarder (dist/sandbox/forwarder.js) is not built: run `npm run build`");
    const mounts: MountPlan = {
      systemArgs: system.args, systemBound: system.bound, nodePrefix: planNode(process.execPath, system.bound), forwarderHostPath,
      hidePaths: [stateRoot, ...(options.hidePaths ?? []).map((p) => resolve(p))],
    };
    const runAs = await chooseSandboxUser(options.runAs, bwrap, mounts, stateRoot, warnings);
    for (const w of warnings) warnOnce(`harnessrl sandbox (bwrap): ${w}`);
    return new BwrapBackend({ bwrap, layout, mounts, stateRoot, runAs }, warnings);
  }

  async create(options: SandboxCreateOptions): Promise<Sandbox> {
    validateCreateOptions(options);
    const id = newId("sbx");
    const cgroup = SandboxCgroup.forSandbox(this.ctx.layout, id, options.limits.cpuShares !== undefined);
    const sandbox = new BwrapSandbox(id, sandboxDirs(join(this.ctx.stateRoot, id)), this.ctx, options, cgroup, (s) => this.sandboxes.delete(s));
    this.sandboxes.add(sandbox);
    return startOrDestroy(sandbox);
  }

  reapOrphans(): Promise<ReapReport> {
    return reapOrphans(this.ctx.stateRoot);
  }

  /** The host uid sandboxed commands run as. */
  get sandboxUid(): number {
    return this.ctx.runAs?.owner.uid ?? process.getuid?.() ?? -1;
  }

  live(): Sandbox[] {
    return [...this.sandboxes];
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.sandboxes].map((s) => s.destroy()));
  }
}
