import { mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { readFile, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { procStatFields } from "../core/proc-stat.js";

/**
 * One state directory per sandbox (`<stateRoot>/<id>/`) holding `state.json`, the workspace, the private HOME and
 * the proxy bridge socket. state.json names the owning control plane (pid + kernel start time, so a recycled pid is
 * not mistaken for a live owner) and the cgroups to remove, which is all `reapOrphans()` needs after a crash.
 */
export const SandboxStateSchema = z.object({
  id: z.string().regex(/^sbx_[0-9a-z]+$/),
  backend: z.string(),
  ownerPid: z.number().int().positive(),
  ownerStartTime: z.string(),
  createdAt: z.string(),
  /** Controller → cgroup directory. */
  cgroups: z.partialRecord(z.enum(["memory", "pids", "cpu"]), z.string()),
  labels: z.record(z.string(), z.string()).default({}),
  /**
   * bwrap: the neutral directory (`<mount root>/<32 hex>`) holding what is bound into the sandbox (workspace, HOME,
   * bridge, agent code), apart from the state directory so mountinfo names no state path. Removed with the sandbox.
   */
  mountDir: z.string().regex(/\/[0-9a-f]{32}$/).optional(),
});
export type SandboxState = z.infer<typeof SandboxStateSchema>;

export function defaultStateRoot(): string {
  return resolve(process.env.HARNESSRL_SANDBOX_ROOT ?? join(tmpdir(), "harnessrl-sandboxes"));
}

/** Kernel start time (clock ticks since boot) of a process, or undefined when it does not exist. */
export function processStartTime(pid: number): string | undefined {
  return procStatFields(pid)?.[19];
}

const selfStartTime = processStartTime(process.pid) ?? "unknown";

export function ownerIdentity(): { ownerPid: number; ownerStartTime: string } {
  return { ownerPid: process.pid, ownerStartTime: selfStartTime };
}

export function isOwnerAlive(state: Pick<SandboxState, "ownerPid" | "ownerStartTime">): boolean {
  const start = processStartTime(state.ownerPid);
  if (start !== undefined) return start === state.ownerStartTime;
  if (state.ownerStartTime !== "unknown") return false;
  try {
    process.kill(state.ownerPid, 0); // no /proc (not Linux): fall back to "a process with that pid exists"
    return true;
  } catch {
    return false;
  }
}

/**
 * Creates a sandbox's state directory and state.json. Synchronous on purpose: a sandbox registers its exit cleanup
 * first, and a signal's process.exit then never lands between an async mkdir queued in the thread pool and the
 * cleanup that should remove it (a directory created after its cleanup ran would outlive the control plane).
 */
export function writeStateSync(dir: string, state: SandboxState): void {
  mkdirSync(dir, { recursive: true });
  rewriteStateSync(dir, state);
}

/** Rewrites an existing sandbox's state.json in place (a pooled sandbox handed out: a small file, no thread-pool hops). */
export function rewriteStateSync(dir: string, state: SandboxState): void {
  writeFileSync(join(dir, "state.json.tmp"), JSON.stringify(state));
  renameSync(join(dir, "state.json.tmp"), join(dir, "state.json"));
}

export type StateEntry = { dir: string; id: string; state: SandboxState | undefined };

/** Every sandbox state dir under the root; `state` is undefined when state.json is missing or corrupt. */
export async function listStates(root: string): Promise<StateEntry[]> {
  const names = await readdir(root).catch(() => [] as string[]);
  const out: StateEntry[] = [];
  for (const name of names) {
    if (!name.startsWith("sbx_")) continue;
    const dir = join(root, name);
    // A create killed between writing state.json.tmp and renaming it still names its owner in the tmp file.
    const raw = (await readFile(join(dir, "state.json"), "utf8").catch(() => undefined)) ?? (await readFile(join(dir, "state.json.tmp"), "utf8").catch(() => undefined));
    let state: SandboxState | undefined;
    if (raw !== undefined) {
      try {
        const parsed = SandboxStateSchema.safeParse(JSON.parse(raw));
        state = parsed.success ? parsed.data : undefined;
      } catch {
        state = undefined;
      }
    }
    out.push({ dir, id: name, state });
  }
  return out;
}

/** A sandbox directory without a readable owner younger than this may be a create in progress elsewhere. */
const HALF_CREATED_GRACE_MS = 60_000;

/**
 * Whether a reaper must leave an ownerless sandbox directory alone: it may still be being created, or it is gone
 * already (its live owner destroyed it since it was listed: state.json goes first). Counting a vanished directory as
 * reaped reported "left by a crashed control plane" for sandboxes that another process had just destroyed.
 */
export async function mayBeHalfCreated(dir: string): Promise<boolean> {
  const st = await stat(dir).catch(() => undefined);
  return st === undefined || Date.now() - st.mtimeMs < HALF_CREATED_GRACE_MS;
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** Processes whose environment carries HARNESSRL_SANDBOX_ID=<id> (how the unsandboxed backend finds its strays). */
export function processesWithSandboxId(id: string): number[] {
  const needle = Buffer.from(`\0HARNESSRL_SANDBOX_ID=${id}\0`);
  const out: number[] = [];
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      const env = Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${name}/environ`)]);
      if (env.includes(needle)) out.push(pid);
    } catch {
      // exited meanwhile or not ours to read
    }
  }
  return out;
}

/** SIGKILLs every process carrying the sandbox's id until none is left (or the time is up). Returns kills sent. */
export async function killBySandboxId(id: string, timeoutMs = 2000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let killed = 0;
  while (true) {
    const pids = processesWithSandboxId(id);
    if (pids.length === 0 || Date.now() > deadline) return killed;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
        killed++;
      } catch {
        // gone meanwhile
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
