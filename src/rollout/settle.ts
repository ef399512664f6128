import { setTimeout as sleep } from "node:timers/promises";

export interface SettleProbe {
  /** Calls in flight and records written, summed over all sessions of the rollout. */
  status(): { inFlight: number; records: number };
}

export interface SettleOptions {
  /** The record count must stay unchanged, with nothing in flight, for this long. */
  stableMs: number;
  pollMs: number;
  timeoutMs: number;
}

export const DEFAULT_SETTLE: SettleOptions = { stableMs: 150, pollMs: 25, timeoutMs: 30_000 };

/**
 * Waits until a rollout has settled: no call in flight and a record count that stayed the same for `stableMs`.
 * Harness processes can exit while a detached child still talks to the proxy; trees built too early miss calls.
 * Returns whether it settled before the timeout.
 */
export async function waitSettled(probe: SettleProbe, options: SettleOptions = DEFAULT_SETTLE): Promise<{ settled: boolean; records: number }> {
  const deadline = Date.now() + options.timeoutMs;
  let last = probe.status();
  let stableSince = Date.now();
  for (;;) {
    const now = Date.now();
    const s = probe.status();
    if (s.inFlight > 0 || s.records !== last.records) stableSince = now;
    last = s;
    if (s.inFlight === 0 && now - stableSince >= options.stableMs) return { settled: true, records: s.records };
    if (now >= deadline) return { settled: false, records: s.records };
    await sleep(options.pollMs);
  }
}
