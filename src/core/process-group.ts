/**
 * SIGKILLs a whole process group (one started with `detached`, whose leader's pid names it). Only a real group id:
 * `kill(-0)` would be `kill(0)`, our own group.
 */
export function killProcessGroup(pgid: number): void {
  if (!Number.isInteger(pgid) || pgid <= 1) return;
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // the group is already empty
  }
}
