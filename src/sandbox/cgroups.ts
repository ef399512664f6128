import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { InfraError, errorMessage } from "../core/errors.js";
import type { SandboxLimits } from "./types.js";

/**
 * Per-sandbox cgroups on cgroup v1 (one directory per controller hierarchy, as on these machines), v2 (one directory),
 * or a hybrid of both: each controller is taken from v2 when the unified hierarchy offers it, else from v1. All
 * operations are synchronous: they are tiny kernel-file writes, and the process-exit hook must be able to use them.
 */
export type Controller = "memory" | "pids" | "cpu";

export interface Hierarchy {
  version: 1 | 2;
  /** Where the hierarchy is mounted. */
  mount: string;
}

export interface CgroupLayout {
  controllers: Partial<Record<Controller, Hierarchy>>;
  /** Parent path (relative to each hierarchy's mount) under which sandbox cgroups are created. */
  parent: string;
  warnings: string[];
}

const CONTROLLERS: Controller[] = ["memory", "pids", "cpu"];

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** Reads /proc/self/mountinfo and picks a hierarchy per controller (v2 preferred). */
export function detectCgroups(parent = process.env.HARNESSRL_CGROUP_PARENT ?? "harnessrl"): CgroupLayout {
  const controllers = pickHierarchies(readText("/proc/self/mountinfo") ?? "", (mount) => readText(join(mount, "cgroup.controllers")));
  const warnings: string[] = [];
  if (!controllers.memory) warnings.push("no cgroup memory controller available: sandbox memory limits are NOT enforced");
  if (!controllers.pids) warnings.push("no cgroup pids controller available: sandbox process limits are NOT enforced");
  return { controllers, parent, warnings };
}

/**
 * Pure part of the detection: v1 mounts name their controllers in the super options; the v2 mount lists what it
 * offers in cgroup.controllers (`readControllers`). A controller present in both (hybrid setups) is taken from v2.
 */
export function pickHierarchies(mountinfo: string, readControllers: (mount: string) => string | undefined): Partial<Record<Controller, Hierarchy>> {
  const controllers: Partial<Record<Controller, Hierarchy>> = {};
  const v1: Partial<Record<Controller, string>> = {};
  let v2Mount: string | undefined;
  for (const line of mountinfo.split("\n")) {
    const [pre, post] = line.split(" - ");
    if (!pre || !post) continue;
    const mountPoint = pre.split(" ")[4];
    const [fstype, , superOpts] = post.split(" ");
    if (!mountPoint) continue;
    if (fstype === "cgroup2") v2Mount ??= mountPoint;
    if (fstype === "cgroup" && superOpts) {
      const opts = superOpts.split(",");
      for (const c of CONTROLLERS) if (opts.includes(c)) v1[c] ??= mountPoint;
    }
  }
  const v2Available = new Set((v2Mount ? (readControllers(v2Mount) ?? "") : "").trim().split(/\s+/));
  for (const c of CONTROLLERS) {
    if (v2Mount && v2Available.has(c)) controllers[c] = { version: 2, mount: v2Mount };
    else if (v1[c]) controllers[c] = { version: 1, mount: v1[c] };
  }
  return controllers;
}

/** Makes `<mount>/<parent>` exist; on v2 also delegates the controllers to its children. Returns new warnings. */
export function prepareParents(layout: CgroupLayout): string[] {
  const warnings: string[] = [];
  const v2 = new Map<string, Controller[]>();
  for (const c of CONTROLLERS) {
    const h = layout.controllers[c];
    if (!h) continue;
    const dir = join(h.mount, layout.parent);
    try {
      mkdirSync(dir, { recursive: true });
      if (h.version === 2) v2.set(h.mount, [...(v2.get(h.mount) ?? []), c]);
    } catch (e) {
      warnings.push(`cannot create cgroup ${dir} (${errorMessage(e)}): ${c} limits are NOT enforced`);
      delete layout.controllers[c];
    }
  }
  for (const [mount, cs] of v2) {
    // Every level from the mount down to the parent must pass the controllers on (cgroup v2 delegation).
    const levels = [mount, ...layout.parent.split("/").filter(Boolean).map((_, i, parts) => join(mount, ...parts.slice(0, i + 1)))];
    for (const c of cs) {
      try {
        for (const level of levels) {
          const have = (readText(join(level, "cgroup.subtree_control")) ?? "").split(/\s+/);
          if (!have.includes(c)) writeFileSync(join(level, "cgroup.subtree_control"), `+${c}`);
        }
      } catch (e) {
        warnings.push(`cannot enable the ${c} controller under ${join(mount, layout.parent)} (${errorMessage(e)}): ${c} limits are NOT enforced`);
        delete layout.controllers[c];
      }
    }
  }
  return warnings;
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function counter(text: string | undefined, key: string): number {
  const m = text?.match(new RegExp(`^${key} (\\d+)$`, "m"));
  return m?.[1] ? Number(m[1]) : 0;
}

export interface CgroupCounters {
  oomKills: number;
  pidsMaxHits: number;
}

export class SandboxCgroup {
  /** Controller → directory of this sandbox's cgroup. */
  readonly paths: Partial<Record<Controller, string>>;
  /** Distinct directories (a v2 directory serves several controllers). */
  readonly dirs: string[];

  constructor(paths: Partial<Record<Controller, string>>) {
    this.paths = paths;
    this.dirs = [...new Set(Object.values(paths))];
  }

  /** `withCpu: false` skips the cpu hierarchy (no weight requested: one cgroup less to create, join and remove). */
  static forSandbox(layout: CgroupLayout, id: string, withCpu = true): SandboxCgroup {
    const paths: Partial<Record<Controller, string>> = {};
    for (const c of CONTROLLERS) {
      const h = layout.controllers[c];
      if (c === "cpu" && !withCpu) continue;
      if (h) paths[c] = join(h.mount, layout.parent, id);
    }
    return new SandboxCgroup(paths);
  }

  /** The cgroup.procs files a new process must write its pid into to join every hierarchy. */
  procsFiles(): string[] {
    return this.dirs.map((d) => join(d, "cgroup.procs"));
  }

  create(limits: SandboxLimits): void {
    try {
      for (const d of this.dirs) mkdirSync(d);
      this.setLimits(limits);
    } catch (e) {
      this.remove(200);
      throw new InfraError("sandbox_cgroup", `cannot set up sandbox cgroup: ${errorMessage(e)}`, { cause: e, retryable: true });
    }
  }

  /** Writes the limits (also on a cgroup already in use: a pooled sandbox gets its own limits when it is handed out). */
  setLimits(limits: SandboxLimits): void {
    const { memory, pids, cpu } = this.paths;
    if (memory) {
      if (existsSync(join(memory, "memory.max"))) {
        writeFileSync(join(memory, "memory.max"), String(limits.memoryBytes));
        if (existsSync(join(memory, "memory.swap.max"))) writeFileSync(join(memory, "memory.swap.max"), "0");
      } else {
        // memsw = memory + swap: equal to the memory limit means no swapping around the ceiling. v1 insists on
        // memsw >= memory at every moment, so a raise writes memsw first and a cut writes memory first.
        const memsw = join(memory, "memory.memsw.limit_in_bytes");
        const mem = join(memory, "memory.limit_in_bytes");
        const order = existsSync(memsw) ? (limits.memoryBytes > Number(readText(mem) ?? "0") ? [memsw, mem] : [mem, memsw]) : [mem];
        for (const f of order) writeFileSync(f, String(limits.memoryBytes));
      }
    }
    if (pids) writeFileSync(join(pids, "pids.max"), String(limits.maxPids));
    if (cpu && limits.cpuShares !== undefined) {
      if (existsSync(join(cpu, "cpu.weight"))) {
        const weight = Math.max(1, Math.min(10000, Math.round(1 + ((limits.cpuShares - 2) * 9999) / 262142)));
        writeFileSync(join(cpu, "cpu.weight"), String(weight));
      } else {
        writeFileSync(join(cpu, "cpu.shares"), String(Math.max(2, Math.round(limits.cpuShares))));
      }
    }
  }

  counters(): CgroupCounters {
    const { memory, pids } = this.paths;
    let oomKills = 0;
    if (memory) {
      const v2 = readText(join(memory, "memory.events"));
      oomKills = v2 !== undefined ? counter(v2, "oom_kill") : counter(readText(join(memory, "memory.oom_control")), "oom_kill");
    }
    const pidsMaxHits = pids ? counter(readText(join(pids, "pids.events")), "max") : 0;
    return { oomKills, pidsMaxHits };
  }

  pids(): number[] {
    const out = new Set<number>();
    for (const f of this.procsFiles()) {
      // Only real pids: a 0 (a task outside our pid namespace) would make kill() signal our own process group.
      for (const line of (readText(f) ?? "").split("\n")) {
        const pid = line.trim();
        if (/^[1-9]\d*$/.test(pid)) out.add(Number(pid));
      }
    }
    return [...out];
  }

  /** One pass: v2 cgroup.kill where available, SIGKILL to every listed pid. Returns how many pids were listed. */
  private killPass(): number {
    for (const d of this.dirs) {
      if (existsSync(join(d, "cgroup.kill"))) {
        try {
          writeFileSync(join(d, "cgroup.kill"), "1");
        } catch {
          // fall back to the per-pid kill below
        }
      }
    }
    const pids = this.pids().filter((pid) => pid !== process.pid);
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    return pids.length;
  }

  /**
   * SIGKILLs everything in the cgroup until it is empty. A fork bomb may create processes between reading and killing;
   * the pids limit bounds it, so this converges. Synchronous (for the exit hook); returns processes signalled.
   */
  killAll(timeoutMs = 2000): number {
    const deadline = Date.now() + timeoutMs;
    let killed = 0;
    while (true) {
      const n = this.killPass();
      killed += n;
      if (n === 0 || Date.now() > deadline) return killed;
      sleepSync(2);
    }
  }

  /** killAll without blocking the event loop. Resolves true once the cgroup is empty. */
  async drain(timeoutMs = 2000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.killPass() > 0) {
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return true;
  }

  /** Removes the cgroup directories; waits a little for killed processes to leave. Returns errors. */
  remove(timeoutMs = 2000): string[] {
    const errors: string[] = [];
    const deadline = Date.now() + timeoutMs;
    for (const d of this.dirs) {
      while (true) {
        try {
          rmdirSync(d);
          break;
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === "ENOENT") break;
          if (code !== "EBUSY" || Date.now() > deadline) {
            errors.push(`rmdir ${d}: ${errorMessage(e)}`);
            break;
          }
          sleepSync(5);
        }
      }
    }
    return errors;
  }
}
