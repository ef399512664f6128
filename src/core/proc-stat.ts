import { readFileSync } from "node:fs";

/**
 * The fields of /proc/<pid>/stat after the command name, so index 0 is field 3 (state), 1 ppid, 11 utime, 12 stime,
 * 13 cutime, 14 cstime, 19 starttime. The name (field 2) may hold spaces and parentheses: fields are read after the
 * last ')'. Undefined when the process is gone (or this is not Linux).
 */
export function procStatFields(pid: number | "self"): string[] | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** USER_HZ on Linux: the unit of /proc's CPU times. */
export const CLOCK_TICKS_PER_SECOND = 100;
