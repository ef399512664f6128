/** A process to start for the control plane (a sandbox's launch chain: cgroup wrapper → setpriv → bwrap → agent). */
export interface LaunchSpec {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Bytes the process reads from fd 3 (bwrap's `--seccomp 3`: the compiled filter). */
  fd3?: Buffer;
}

/** How a launched process ended. */
export interface LaunchExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last few KiB it (or its launch chain) wrote to stderr. */
  diagnostics: string;
}

/**
 * A started process with one control channel: what is written goes to its stdin, what it writes to stdout arrives
 * through `onOutput`. `exited` resolves once the process has ended and all of its output has been delivered.
 */
export interface Launched {
  /** Queued until the channel exists; dropped once the process has ended. */
  write(chunk: Buffer): void;
  /** The one listener for its stdout (set before the first event-loop turn, or output is lost). */
  onOutput(listener: (chunk: Buffer) => void): void;
  readonly exited: Promise<LaunchExit>;
  /** SIGKILLs the process (its sandbox ends with it). */
  kill(): void;
}

/** Bytes of stderr kept for a launched process's exit report. */
export const DIAGNOSTICS_BYTES = 4096;

/** Appends `chunk` to the kept tail of a diagnostics buffer. */
export function keepTail(kept: Buffer, chunk: Buffer | string, limit = DIAGNOSTICS_BYTES): Buffer {
  const all = Buffer.concat([kept, typeof chunk === "string" ? Buffer.from(chunk) : chunk]);
  return all.length > limit ? all.subarray(all.length - limit) : all;
}
