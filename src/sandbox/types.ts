/**
 * The sandbox contract: a short-lived place where one rollout (task × harness) runs. Backends (`bwrap`, `local-unsafe`)
 * implement it and all pass test/sandbox/backend-contract.ts. Paths given to `exec`/`readFile`/… are relative to the
 * workspace unless an absolute in-sandbox path is given to `exec`'s cwd.
 */

export interface SandboxLimits {
  /** Memory ceiling for everything the sandbox's commands run, including their /tmp (bwrap adds its agent's share on top). */
  memoryBytes: number;
  /** Maximum number of processes/threads the commands may have alive at once (bwrap adds its agent's on top). */
  maxPids: number;
  /** Wall-clock budget for the sandbox's whole life: every exec is cut off when it runs out. */
  wallClockMs: number;
  /** Relative CPU weight (cgroup v1 cpu.shares scale, 1024 = default). */
  cpuShares?: number;
  /**
   * Disk budget of the workspace and HOME together (allocated bytes; default 1 GiB). bwrap: past it every process of
   * the sandbox is killed and the exec reports `diskLimitHit`; each file is also capped at it. local-unsafe: ignored.
   */
  diskBytes?: number;
}

export interface ProxyAddress {
  host: string;
  port: number;
}

export interface SandboxNetwork {
  /** The capture proxy: the only network endpoint the sandbox can reach (as http://127.0.0.1:<port>). */
  proxy?: ProxyAddress;
}

/** Workspace seed: a map of relative path → contents, or a host directory whose contents are copied. */
export type WorkspaceSeed = Record<string, string | Uint8Array> | string;

export interface SandboxCreateOptions {
  workspaceFiles?: WorkspaceSeed;
  /** Environment for every exec (exec's own env is layered on top). */
  env?: Record<string, string>;
  limits: SandboxLimits;
  network?: SandboxNetwork;
  /** Host paths made visible read-only at the same path (e.g. a harness installation). */
  readOnlyPaths?: string[];
  /** Free-form labels recorded in the sandbox state (rollout id, harness) for operators. */
  labels?: Record<string, string>;
}

export interface ExecOptions {
  /** Relative to the workspace, or an absolute path as the command sees it. Default: the workspace. */
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string | Uint8Array;
  /** Per-exec timeout; the sandbox's remaining wall-clock budget also applies. */
  timeoutMs?: number;
  /** Bytes of stdout/stderr kept (head and tail halves); the rest is dropped and flagged. Default 1 MiB. */
  stdoutLimit?: number;
  stderrLimit?: number;
  /**
   * The proxy is reachable during this exec (default: true when the sandbox has a proxy). Commands that must not call
   * the model (a verifier) pass false: no HARNESSRL_PROXY_URL, and the bridge is closed unless another exec of the
   * sandbox that uses it runs at the same time.
   */
  proxy?: boolean;
}

export interface ExecResult {
  /** Exit status; null when the command was ended by a signal. */
  exitCode: number | null;
  /** Signal that ended the command (SIGKILL also when the whole sandbox was killed under it). */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** Total bytes the command wrote, including those dropped. */
  stdoutBytes: number;
  stderrBytes: number;
  timedOut: boolean;
  /** The kernel OOM killer killed a process of this sandbox during the exec. */
  oomKilled: boolean;
  /** A fork/clone failed because the pids limit was reached (undefined: the backend cannot tell). */
  pidsLimitHit?: boolean;
  /** The sandbox went over its disk budget (`limits.diskBytes`) during the exec and was killed (bwrap only). */
  diskLimitHit?: boolean;
  durationMs: number;
}

export type FileRoot = "workspace" | "home";

export interface FileOptions {
  /** Which sandbox directory the relative path is resolved in. Default "workspace". */
  root?: FileRoot;
}

/** Paths as the sandboxed commands see them (differ from host paths for isolating backends). */
export interface SandboxPaths {
  workspace: string;
  home: string;
}

/** A host-side service's handler: one request text in, one answer text out (see {@link Sandbox.serve}). */
export type ServiceHandler = (request: string) => Promise<string>;

export interface Sandbox {
  readonly id: string;
  readonly backend: string;
  /** Host path of the workspace (read results, add verifier files after the harness ended). */
  readonly workspaceDir: string;
  /** Host path of the sandbox's private HOME (harness config files are generated here). */
  readonly homeDir: string;
  readonly paths: SandboxPaths;
  /** Base URL of the capture proxy as seen from inside (also exported as HARNESSRL_PROXY_URL), if any. */
  readonly proxyUrl: string | undefined;
  exec(argv: string[], options?: ExecOptions): Promise<ExecResult>;
  readFile(path: string, options?: FileOptions): Promise<Buffer>;
  /** Creates parent directories; `mode` (e.g. 0o755 for a script) defaults to 0o644. */
  writeFile(path: string, data: string | Uint8Array, options?: FileOptions & { mode?: number }): Promise<void>;
  /** Regular files below `dir` (relative paths, sorted, symlinks not followed). */
  listFiles(dir?: string, options?: FileOptions & { maxEntries?: number }): Promise<string[]>;
  /**
   * Serves `handler` on the host through a unix socket the sandbox's commands can connect to; returns the socket's
   * path as they see it. One request per connection: the client writes it and half-closes, the host answers and
   * closes (bounded: 1 MiB per request, 8 handled at once). `name`: lower-case letters, digits and '-', not "proxy".
   * Closed by destroy().
   */
  serve(name: string, handler: ServiceHandler): Promise<string>;
  /** Kills everything the sandbox runs and removes all its state. Idempotent. */
  destroy(): Promise<void>;
}

export interface ReapReport {
  /** Sandboxes whose owning control plane was dead and whose state was removed. */
  reaped: string[];
  /** Processes killed while reaping. */
  killedProcesses: number;
  errors: string[];
}

export interface SandboxBackend {
  readonly name: string;
  /** True when the backend gives no isolation (development only). */
  readonly unsafe: boolean;
  create(options: SandboxCreateOptions): Promise<Sandbox>;
  /** Removes state left by control planes that died (owner pid gone). Run at backend start. */
  reapOrphans(): Promise<ReapReport>;
  /** Sandboxes created by this backend instance and not yet destroyed. */
  live(): Sandbox[];
  /** Destroys every live sandbox of this instance. */
  close(): Promise<void>;
}

export interface SandboxBackendOptions {
  /** Directory holding one state directory per sandbox. Default $HARNESSRL_SANDBOX_ROOT or <tmp>/harnessrl-sandboxes. */
  stateRoot?: string;
  /** Host paths that must never be visible inside (e.g. the proxy's database directory). */
  hidePaths?: string[];
  /**
   * Sandboxes kept started and waiting, so `create()` skips the start (bwrap; backends without a pool ignore it).
   * Default `{ size: 2 }`; `{ size: 0 }` turns the pool off.
   */
  pool?: { size: number };
}
