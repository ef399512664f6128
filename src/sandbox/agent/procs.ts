/**
 * Process bookkeeping inside the sandbox's PID namespace, for the exec agent: every process it can see is one of the
 * sandbox's (plus bubblewrap's init as pid 1 and the agent itself). Node built-ins only (runs from dist/ in the sandbox).
 */
import { readFileSync, readdirSync } from "node:fs";

interface ProcInfo {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
}

/** Live (non-zombie) processes other than pid 1 and the agent. */
function listProcs(): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === 1 || pid === process.pid) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    // comm (field 2) may contain spaces and parentheses: fields are read after the last ')'.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (f[0] === "Z" || f[0] === "X") continue; // dead, waiting to be reaped by its parent or init
    out.push({ pid, ppid: Number(f[1]), pgrp: Number(f[2]), session: Number(f[3]) });
  }
  return out;
}

function hasMarker(pid: number, marker: Buffer): boolean {
  try {
    return Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${pid}/environ`)]).includes(marker);
  } catch {
    return false;
  }
}

function sigkill(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // gone meanwhile
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * True when this process is the child of bubblewrap's init in a private PID namespace: only then may `kill(-1)` be
 * used, because it reaches exactly the sandbox's processes. The agent is init's first child, so pid 2 there; in the
 * host's namespace pid 2 is the kernel's kthreadd, never a node process, so pid 2 alone rules out the host's
 * namespace (where kill(-1) as root would signal every process on the machine), whatever /proc/1/comm says.
 */
export function inPrivatePidNamespace(pid = process.pid, ppid = process.ppid, initComm = (): string => readFileSync("/proc/1/comm", "utf8")): boolean {
  try {
    return pid === 2 && ppid === 1 && initComm().trim() === "bwrap";
  } catch {
    return false;
  }
}

/**
 * Kills every process of the sandbox but the agent and init, until none is left. `kill(-1)` is atomic with respect to
 * fork (the kernel signals under the task list lock, and a process with a pending SIGKILL cannot fork), so a fork bomb
 * cannot outrun it. Returns false when something survived `timeoutMs`.
 */
export async function sweepNamespace(useKillAll: boolean, timeoutMs = 2000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const procs = listProcs();
    if (procs.length === 0) return true;
    if (Date.now() > deadline) return false;
    if (useKillAll) {
      try {
        process.kill(-1, "SIGKILL");
      } catch {
        // nothing to signal
      }
    } else {
      for (const p of procs) sigkill(p.pid);
    }
    await sleep(1);
  }
}

/**
 * The processes of one exec when others run next to it: its process group and session (the leader is started in a
 * session of its own), their descendants, and anything carrying the exec's environment marker (a process that left
 * the session and was orphaned). Killed until none is left; returns false when something survived `timeoutMs`.
 */
export async function killExecTree(leader: number, marker: string, timeoutMs = 2000): Promise<boolean> {
  const needle = Buffer.from(`\0${marker}\0`);
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const procs = listProcs();
    const tree = new Set<number>([leader]);
    for (const p of procs) if (p.pgrp === leader || p.session === leader || hasMarker(p.pid, needle)) tree.add(p.pid);
    // Descendants: a process stays attributable through its parent as long as the parent lives.
    for (let grew = true; grew; ) {
      grew = false;
      for (const p of procs) {
        if (!tree.has(p.pid) && tree.has(p.ppid)) {
          tree.add(p.pid);
          grew = true;
        }
      }
    }
    const live = procs.filter((p) => tree.has(p.pid));
    if (live.length === 0) return true;
    if (Date.now() > deadline) return false;
    for (const p of live) sigkill(p.pid);
    await sleep(1);
  }
}
