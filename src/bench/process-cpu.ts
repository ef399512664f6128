import { readdirSync, readFileSync } from "node:fs";
import { CLOCK_TICKS_PER_SECOND, procStatFields } from "../core/proc-stat.js";

/** CPU seconds and process count of one kind of process. */
export interface KindCpu {
  processes: number;
  cpuSeconds: number;
}

/** Names a process by its command line (null: count it as "other"). */
export type Classify = (cmdline: string) => string | null;

interface Seen {
  ppid: number;
  /** Start time (clock ticks after boot): tells a reused pid from the process seen before. */
  start: number;
  cmdline: string;
  /** utime + stime at the last sighting, seconds (the process's own, not its children's). */
  cpu: number;
}

function readProc(pid: string): Seen | null {
  // procStatFields' indices: ppid 1, utime 11, stime 12, starttime 19.
  const f = procStatFields(Number(pid));
  if (!f) return null;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
    return { ppid: Number(f[1]), start: Number(f[19]), cmdline, cpu: (Number(f[11]) + Number(f[12])) / CLOCK_TICKS_PER_SECOND };
  } catch {
    return null; // gone meanwhile
  }
}

/**
 * Per-process CPU of a process tree, sampled from /proc every `intervalMs`: each process's own CPU at its last
 * sighting, so the last interval of each process and processes shorter than one interval are missed (an undercount
 * of a few ms per process). A process counts if its parent chain, as seen, reaches `root`; its kind is taken from
 * its command line at its last sighting (after its exec).
 */
export class ProcessCpuSampler {
  private readonly seen = new Map<number, Seen>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly root: number,
    private readonly intervalMs = 20,
  ) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
  }

  /** Stops sampling and sums CPU by kind, over the root's descendants (and the root). */
  stop(classify: Classify): Record<string, KindCpu> {
    if (this.timer) clearInterval(this.timer);
    this.sample();
    const ours = (pid: number): boolean => {
      for (let p = pid, hops = 0; hops < 64; hops++) {
        if (p === this.root) return true;
        const s = this.seen.get(p);
        if (!s) return false;
        p = s.ppid;
      }
      return false;
    };
    const out: Record<string, KindCpu> = {};
    for (const [pid, s] of this.seen) {
      if (!ours(pid)) continue;
      const kind = classify(s.cmdline) ?? "other";
      const k = (out[kind] ??= { processes: 0, cpuSeconds: 0 });
      k.processes++;
      k.cpuSeconds += s.cpu;
    }
    return out;
  }

  private sample(): void {
    for (const name of readdirSync("/proc")) {
      const pid = Number(name);
      if (!Number.isInteger(pid)) continue;
      const s = readProc(name);
      if (!s || s.cmdline === "") continue;
      const before = this.seen.get(pid);
      // The same process keeps the parent it was first seen with (an orphan is re-parented to init as the tree ends,
      // which would cut it off); a reused pid is another process: the one seen later wins (rare within one run).
      this.seen.set(pid, before && before.start === s.start ? { ...s, ppid: before.ppid } : s);
    }
  }
}
