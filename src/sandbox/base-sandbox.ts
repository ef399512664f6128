import { join } from "node:path";
import { UserError } from "../core/errors.js";
import { validateExec } from "./options.js";
import { HostService } from "./service-host.js";
import type { ResolvedExec } from "./options.js";
import { listConfined, readConfined, writeConfined } from "./workspace.js";
import type { Owner } from "./workspace.js";
import type { ExecOptions, ExecResult, FileOptions, Sandbox, SandboxPaths, ServiceHandler } from "./types.js";

export interface SandboxDirs {
  /** The sandbox's state directory on the host (`<stateRoot>/<id>`). */
  stateDir: string;
  workspaceDir: string;
  homeDir: string;
}

export function sandboxDirs(stateDir: string): SandboxDirs {
  return { stateDir, workspaceDir: join(stateDir, "workspace"), homeDir: join(stateDir, "home") };
}

/** Starts a freshly built sandbox; one that fails to start is destroyed (nothing left behind) and the error rethrown. */
export async function startOrDestroy<S extends { start(): Promise<void>; destroy(): Promise<void> }>(sandbox: S): Promise<S> {
  try {
    await sandbox.start();
  } catch (e) {
    await sandbox.destroy().catch(() => undefined);
    throw e;
  }
  return sandbox;
}

/** What every backend shares: option checks, the wall-clock budget, confined file access, idempotent destroy. */
export abstract class BaseSandbox implements Sandbox {
  abstract readonly backend: string;
  abstract readonly paths: SandboxPaths;
  abstract readonly proxyUrl: string | undefined;
  readonly workspaceDir: string;
  readonly homeDir: string;
  readonly stateDir: string;
  private readonly deadline: number;
  private destroying: Promise<void> | undefined;
  /** Host uid/gid of the sandboxed user when it differs from the control plane's: host-side writes are handed to it. */
  protected owner: Owner | undefined;
  private readonly services = new Map<string, HostService>();

  constructor(
    readonly id: string,
    dirs: SandboxDirs,
    wallClockMs: number,
  ) {
    this.stateDir = dirs.stateDir;
    this.workspaceDir = dirs.workspaceDir;
    this.homeDir = dirs.homeDir;
    this.deadline = Date.now() + wallClockMs;
  }

  get destroyed(): boolean {
    return this.destroying !== undefined;
  }

  async exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    if (this.destroying) throw new UserError("sandbox_destroyed", `sandbox ${this.id} has been destroyed`);
    const resolved = validateExec(argv, options);
    const remaining = this.deadline - Date.now();
    const timeoutMs = Math.min(resolved.timeoutMs ?? Number.POSITIVE_INFINITY, remaining);
    if (timeoutMs <= 0) {
      return {
        exitCode: null, signal: null, stdout: "", stderr: "", stdoutTruncated: false, stderrTruncated: false,
        stdoutBytes: 0, stderrBytes: 0, timedOut: true, oomKilled: false, durationMs: 0,
      };
    }
    return this.runExec(resolved, timeoutMs);
  }

  protected abstract runExec(exec: ResolvedExec, timeoutMs: number): Promise<ExecResult>;
  protected abstract teardown(): Promise<void>;
  /** Where service sockets go: a host directory and the same directory as the sandbox's commands see it. */
  protected abstract serviceDir(): { host: string; inside: string };

  async serve(name: string, handler: ServiceHandler): Promise<string> {
    if (this.destroying) throw new UserError("sandbox_destroyed", `sandbox ${this.id} has been destroyed`);
    if (!/^[a-z0-9-]{1,32}$/.test(name) || name === "proxy" || this.services.has(name)) {
      throw new UserError("invalid_sandbox_options", `bad or duplicate service name "${name}" (lower-case letters, digits, '-'; not "proxy")`);
    }
    const dir = this.serviceDir();
    this.services.set(name, await HostService.listen(join(dir.host, `${name}.sock`), handler, this.owner));
    return `${dir.inside}/${name}.sock`;
  }

  private root(options: FileOptions | undefined): string {
    return options?.root === "home" ? this.homeDir : this.workspaceDir;
  }

  readFile(path: string, options?: FileOptions): Promise<Buffer> {
    return readConfined(this.root(options), path);
  }

  writeFile(path: string, data: string | Uint8Array, options?: FileOptions & { mode?: number }): Promise<void> {
    return writeConfined(this.root(options), path, data, this.owner, options?.mode);
  }

  listFiles(dir = "", options?: FileOptions & { maxEntries?: number }): Promise<string[]> {
    return listConfined(this.root(options), dir, options?.maxEntries ?? 100_000);
  }

  destroy(): Promise<void> {
    this.destroying ??= (async () => {
      await Promise.all([...this.services.values()].map((s) => s.close()));
      await this.teardown();
    })();
    return this.destroying;
  }
}
