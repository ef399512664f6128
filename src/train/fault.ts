/**
 * Test-only crash points. `HARNESSRL_FAULT=<point>` (or `<point>@<step>`) kills this process with SIGKILL when a run
 * reaches that point (of that step), so tests can check that a resume recovers from a kill at every commit boundary.
 * Never set it outside tests: it exists to prove the commit protocol, not as a feature.
 */
export const FAULT_POINTS = [
  /** The step's new policy version and trainer checkpoint are written and fsynced; no metrics line, no state. */
  "after-checkpoint-write",
  /** Everything is fsynced, the step's metrics line is appended but state.json does not name it yet. */
  "after-metrics-append",
  /** state.json names the new step; what the old state named is still on disk. */
  "after-state-commit",
  /** The old checkpoint is deleted, old policy versions are not. */
  "during-cleanup",
  /** The mid-run evaluation (`eval.every`) after a committed step finished; its result is not committed. */
  "after-eval",
  /**
   * An evaluation (a run's, or a `harnessrl eval` / `rollout` job) has journaled this many results
   * (`during-eval@<n>`: the n-th); it is not finished.
   */
  "during-eval",
] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

let inProcess: ((point: FaultPoint, step: number) => void) | null = null;

/** In-process tests replace the kill with a handler (which throws, so nothing after the point runs). */
export function setFaultHandler(handler: ((point: FaultPoint, step: number) => void) | null): void {
  inProcess = handler;
}

export function faultPoint(point: FaultPoint, step: number): void {
  const spec = process.env.HARNESSRL_FAULT;
  if (!spec) return;
  const [name, at] = spec.split("@");
  if (name !== point || (at !== undefined && Number(at) !== step)) return;
  if (inProcess) inProcess(point, step);
  else process.kill(process.pid, "SIGKILL");
}
