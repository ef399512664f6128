/**
 * Last-chance cleanup when the control plane exits or is told to stop: every live sandbox (and a running harness
 * install) registers a synchronous cleanup (kill its processes, remove its cgroup and directories). SIGKILL cannot be caught; what it leaves behind
 * is removed by the next `reapOrphans()`.
 */
type Cleanup = () => void;

const pending = new Set<Cleanup>();
let installed = false;

function runAll(): void {
  for (const fn of [...pending]) {
    pending.delete(fn);
    try {
      fn();
    } catch {
      // best effort: the reaper catches anything left
    }
  }
}

function onSignal(signal: NodeJS.Signals): void {
  runAll();
  // Keep the default behaviour (terminate) unless the application has its own handler for this signal.
  if (process.listenerCount(signal) === 1) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on("exit", runAll);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(sig, onSignal);
}

/** Registers a cleanup; returns the function that unregisters it (call it after a normal destroy). */
export function onExitCleanup(fn: Cleanup): () => void {
  install();
  pending.add(fn);
  return () => {
    pending.delete(fn);
  };
}
