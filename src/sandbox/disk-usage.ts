import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

/**
 * Disk budget of a sandbox's host directories (workspace and HOME): bwrap has no quota and those are plain host
 * folders, so the host measures them while commands run and kills the sandbox past the budget. Bytes are allocated
 * blocks (a sparse file costs what it really uses). Each file is also capped at the budget by RLIMIT_FSIZE inside
 * (writes past it fail with EFBIG/SIGXFSZ), so between two measurements a command can overshoot by what the disk
 * writes in one interval, not by one huge preallocated file.
 */

/** Default budget when the caller's limits name none. */
export const DEFAULT_DISK_BYTES = 1024 ** 3;
/** Directory entries counted at most per measurement; more is over budget too (an inode flood). */
export const MAX_DISK_ENTRIES = 200_000;
/** How often a sandbox with a running exec is measured. */
export const DISK_POLL_MS = 250;

export interface DiskUsage {
  bytes: number;
  entries: number;
  /** The walk stopped at MAX_DISK_ENTRIES. */
  capped: boolean;
}

/** Allocated bytes and entries below `roots` (symlinks not followed; vanishing entries ignored). */
export async function diskUsage(roots: string[], maxEntries = MAX_DISK_ENTRIES): Promise<DiskUsage> {
  const usage: DiskUsage = { bytes: 0, entries: 0, capped: false };
  const stack = [...roots];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      if (++usage.entries > maxEntries) {
        usage.capped = true;
        return usage;
      }
      const p = join(dir, name);
      const st = await lstat(p).catch(() => undefined);
      if (!st) continue;
      usage.bytes += st.blocks * 512;
      if (st.isDirectory()) stack.push(p);
    }
  }
  return usage;
}

/** argv prefix that caps every file the command (and its children) writes at `bytes` (RLIMIT_FSIZE, 512-byte units). */
export function fileSizeCapArgv(bytes: number, argv: string[]): string[] {
  const blocks = Math.max(1, Math.floor(bytes / 512));
  return ["/bin/sh", "-c", `ulimit -f ${blocks} 2>/dev/null; exec "$@"`, "sh", ...argv];
}
