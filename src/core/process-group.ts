import { existsSync } from "node:fs";

/**
 * SIGKILLs a whole process group (one started with `detached`, whose leader's pid names it). Only a real group id:
 * `kill(-0)` would be `kill(0)`, our own group. Use it while the leader has not been reaped yet; afterwards use
 * killReapedGroup.
 */
export function killProcessGroup(pgid: number): void {
  if (!Number.isInteger(pgid) || pgid <= 1) return;
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // the group is already empty
  }
}

/**
 * SIGKILLs what is left of a group whose leader has exited and been reaped (its background stragglers). Linux never
 * hands out a pid that is still some group's id, so while a straggler of ours lives, pid `pgid` is free; a live task
 * with that pid means our group emptied and the number went to someone else, whose own group we must not touch.
 */
export function killReapedGroup(pgid: number): void {
  if (!Number.isInteger(pgid) || pgid <= 1) return;
  if (existsSync(`/proc/${pgid}`)) return; // recycled (a thread id counts too: then we stay out, which is safe)
  killProcessGroup(pgid);
}
