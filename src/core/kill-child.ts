import type { ChildProcess } from "node:child_process";

/**
 * Signals a child process, only if it really started and has not ended. Why not `child.kill()`: when `spawn()` fails
 * at run time (a missing cwd or program, EAGAIN, EMFILE), Node keeps the handle until the next tick with its pid unset
 * (0 in a fresh process), and a `kill()` in that window can become `kill(0, signal)`: every process in *our* process
 * group, the control plane and, under `npm test`, the whole test run (the traced sender of CI's whole-group SIGKILL;
 * the likeliest path is the sandbox launcher getting a spawn whose cwd was gone and the kill for it in one IPC read).
 * Returns whether a signal was sent.
 */
export function killChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): boolean {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return false;
  return child.kill(signal);
}
