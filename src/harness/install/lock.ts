import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { join } from "node:path";
import { InfraError } from "../../core/errors.js";

/** Whether a process with this pid exists (EPERM: it exists but is not ours). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * A cross-process lock: an atomically created directory holding the owner's pid. A lock whose owner died is broken,
 * so a crashed install never blocks the next one. Used so that parallel test workers or CLI runs install once.
 */
export async function withDirLock<T>(lockDir: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(lockDir);
      writeFileSync(join(lockDir, "pid"), String(process.pid));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw new InfraError("install_lock_failed", `cannot create lock ${lockDir}: ${(e as Error).message}`, { cause: e });
      let owner = NaN;
      try {
        owner = Number(readFileSync(join(lockDir, "pid"), "utf8"));
      } catch {
        // the owner is between mkdir and writing its pid; give it a moment
      }
      if (Number.isInteger(owner) && owner > 0 && !alive(owner)) {
        rmSync(lockDir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new InfraError("install_lock_timeout", `waited ${Math.round(timeoutMs / 1000)} s for ${lockDir} (held by pid ${owner})`, { retryable: true });
      await sleep(250);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}
