import { spawnSync } from "node:child_process";
import { accessSync, constants, readFileSync, readdirSync } from "node:fs";
import { chmod, mkdir, stat } from "node:fs/promises";
import { delimiter, dirname, join, resolve } from "node:path";
import { compiledScript } from "../../core/compiled-script.js";
import { InfraError, UserError } from "../../core/errors.js";
import { startOrDestroy } from "../base-sandbox.js";
import { detectCgroups, prepareParents } from "../cgroups.js";
import { validateCreateOptions } from "../options.js";
import { reapOrphans } from "../reaper.js";
import { defaultStateRoot } from "../state.js";
import type { Owner } from "../workspace.js";
import type { ReapReport, Sandbox, SandboxBackend, SandboxBackendOptions, SandboxCreateOptions } from "../types.js";
import { Cell, DEFAULT_PATH } from "./cell.js";
import type { BwrapContext } from "./cell.js";
import { IN_SANDBOX, planNode, systemMountArgs } from "./mounts.js";
import type { MountPlan } from "./mounts.js";
import { DEFAULT_POOL, PoolOptionsSchema, WarmPool } from "./pool.js";
import type { PoolStats } from "./pool.js";
import { BwrapSandbox } from "./sandbox.js";
import { mountRootFor, sweepMountRoot } from "./mount-root.js";
import { sandboxSeccomp } from "./seccomp.js";
import { launcherFor } from "../launcher/client.js";

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

/**
 * The exec agent's bundle (scripts/bundle.mjs: one CommonJS file) next to this module, or in dist/ when this module
 * runs from its TypeScript source (tests).
 */
function agentDir(): string | undefined {
  const main = compiledScript(new URL("../agent/main.cjs", import.meta.url));
  return main === undefined ? undefined : dirname(main);
}

/** Limits of a warm cell while it waits: its agent only (the reserve is added on top), raised at acquire. */
const POOL_IDLE_LIMITS = { memoryBytes: 16 * 1024 * 1024, maxPids: 4, wallClockMs: 1 };

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
  /**
   * Where each sandbox's bound directories (workspace, HOME, bridge, agent code) live, one `<32 hex>` directory per
   * sandbox. Its path is visible inside the sandbox (/proc/self/mountinfo shows a bind mount's source), so it should
   * say nothing about the host: default `/tmp/harnessrl-cells-<uid>`.
   */
  mountRoot?: string;
  /**
   * Who forks the sandboxes' launch chains: "process" (default), a small launcher child of this process, so a large
   * control plane (the engine's memory) never blocks its event loop in fork; "direct", this process itself (the
   * benchmark's comparison arm; also what "process" falls back to when the launcher cannot run). The environment
   * variable HARNESSRL_SANDBOX_LAUNCHER=direct sets the default.
   */
  launcher?: "process" | "direct";
}

/** The exec agent's bundle, read once per backend (each sandbox gets a copy). */
function readAgentFiles(dir: string): Map<string, Buffer> {
  return new Map(readdirSync(dir).filter((f) => f.endsWith(".cjs")).map((f) => [f, readFileSync(join(dir, f))]));
}

/** Decides the sandbox user and proves bwrap works as that user here (unprivileged user namespaces may be disabled). */
async function chooseSandboxUser(choice: BwrapBackendOptions["runAs"], bwrap: string, mounts: MountPlan, mountRoot: string, stateRoot: string, warnings: string[]): Promise<BwrapContext["runAs"]> {
  if (choice === "invoking-user") return undefined;
  const owner = choice ?? (process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined);
  if (!owner) return undefined;
  const setpriv = findExecutable("setpriv");
  if (!setpriv) {
    warnings.push("setpriv (util-linux) not found: sandboxes run as the control plane's own user");
    return undefined;
  }
  // The sandbox user must be able to traverse the mount root (the fallback lies under the state root, and mkdtemp
  // makes 0700 directories).
  for (const dir of [mountRoot, stateRoot]) {
    if (dir === stateRoot && dirname(mountRoot) !== stateRoot) continue;
    const st = await stat(dir);
    if ((st.mode & 0o001) === 0) await chmod(dir, (st.mode & 0o7777) | 0o711);
  }
  const probeMounts = [...mounts.systemArgs, "--proc", "/proc", "--dev", "/dev", "--ro-bind", mountRoot, "/run/state", "--ro-bind", mounts.agentHostDir, IN_SANDBOX.agentDir];
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
  private readonly pool: WarmPool;

  private constructor(
    private readonly ctx: BwrapContext,
    readonly warnings: string[],
    poolSize: number,
  ) {
    // Pooled cells always get a cpu cgroup: whether the sandbox will ask for a CPU weight is not known yet.
    const prepare = (readOnlyPaths: string[]): Promise<Cell> =>
      Cell.create(ctx, { readOnlyPaths, limits: POOL_IDLE_LIMITS, labels: { pool: "warm" }, withCpu: ctx.layout.controllers.cpu !== undefined });
    this.pool = new WarmPool(poolSize, prepare, async (cell) => void (await cell.destroy()));
  }

  static async open(options: BwrapBackendOptions = {}): Promise<BwrapBackend> {
    const pool = PoolOptionsSchema.safeParse(options.pool ?? DEFAULT_POOL);
    if (!pool.success) throw new UserError("invalid_sandbox_options", `invalid sandbox backend options: pool: ${pool.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`);
    const bwrap = findExecutable("bwrap");
    if (!bwrap) throw new InfraError("sandbox_no_bwrap", "bubblewrap (bwrap) is not installed: run `npm run setup` or `apt-get install bubblewrap`");
    const layout = detectCgroups();
    const warnings = [...layout.warnings, ...prepareParents(layout)];
    const stateRoot = resolve(options.stateRoot ?? defaultStateRoot());
    await mkdir(stateRoot, { recursive: true });
    const mountRoot = await mountRootFor(options.mountRoot, stateRoot, warnings);
    const system = systemMountArgs();
    const agentHostDir = agentDir();
    if (!agentHostDir) throw new InfraError("sandbox_no_agent", "the sandbox exec agent (dist/sandbox/agent/main.cjs) is not built: run `npm run build`");
    const mounts: MountPlan = {
      systemArgs: system.args, systemBound: system.bound, nodePrefix: planNode(process.execPath, system.bound), agentHostDir,
      hidePaths: [stateRoot, mountRoot, ...(options.hidePaths ?? []).map((p) => resolve(p))],
    };
    const runAs = await chooseSandboxUser(options.runAs, bwrap, mounts, mountRoot, stateRoot, warnings);
    for (const w of warnings) warnOnce(`harnessrl sandbox (bwrap): ${w}`);
    const backend = new BwrapBackend({ bwrap, layout, mounts, stateRoot, mountRoot, agentFiles: readAgentFiles(agentHostDir), runAs, seccomp: sandboxSeccomp(), launcher: launcherFor(options.launcher) }, warnings, pool.data.size);
    backend.pool.refill();
    return backend;
  }

  /**
   * A warm sandbox from the pool when one with the same mounts is ready (it gets this sandbox's limits, labels,
   * workspace and proxy), else a cold start. A pooled start that fails for an infrastructure reason (e.g. its cgroup
   * refuses the new limits) falls back to a cold start once.
   */
  async create(options: SandboxCreateOptions): Promise<Sandbox> {
    validateCreateOptions(options);
    const onGone = (s: BwrapSandbox): void => void this.sandboxes.delete(s);
    const warm = this.pool.take(options.readOnlyPaths ?? []);
    if (warm) {
      const sandbox = new BwrapSandbox(warm, options, true, onGone);
      this.sandboxes.add(sandbox);
      try {
        return await startOrDestroy(sandbox);
      } catch (e) {
        if (e instanceof UserError) throw e;
      }
    }
    const cell = await Cell.create(this.ctx, {
      readOnlyPaths: options.readOnlyPaths ?? [], limits: options.limits, labels: options.labels ?? {}, withCpu: options.limits.cpuShares !== undefined,
    });
    const sandbox = new BwrapSandbox(cell, options, false, onGone);
    this.sandboxes.add(sandbox);
    return startOrDestroy(sandbox);
  }

  async reapOrphans(): Promise<ReapReport> {
    const report = await reapOrphans(this.ctx.stateRoot);
    // Mount directories whose state directory is gone with its owner (e.g. a state root removed after a crash).
    report.errors.push(...(await sweepMountRoot(this.ctx.mountRoot)));
    return report;
  }

  /** The host uid sandboxed commands run as. */
  get sandboxUid(): number {
    return this.ctx.runAs?.owner.uid ?? process.getuid?.() ?? -1;
  }

  /** The warm pool's size, waiting sandboxes, hits and misses. */
  poolStats(): PoolStats {
    return this.pool.stats();
  }

  /** Resolves once the warm pool is not refilling (full, or waiting for the next create after a failed start). */
  poolSettled(): Promise<void> {
    return this.pool.settled();
  }

  live(): Sandbox[] {
    return [...this.sandboxes];
  }

  /** Destroys every live sandbox and every warm one. */
  async close(): Promise<void> {
    await Promise.allSettled([this.pool.drain(), ...[...this.sandboxes].map((s) => s.destroy())]);
  }
}
