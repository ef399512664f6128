import type { NllWindow } from "./nll-window.js";

/** Why the warm start stopped before its planned steps: the configured strength was reached. */
export type SftStopReason = "nll" | "demo_prob" | "pass_rate";

/**
 * The warm start's stopping rules after an optimizer step, `stop_at_nll` first: the last epoch's mean NLL at or below
 * its target (NllWindow: only once a full epoch has run), or the demonstrations' reproduction probability
 * (DemoProbability: NaN until every demonstration has been trained on once) at or above its target. The held-in pass
 * rate (`stop_at_pass_rate`) needs rollouts and is checked by the warm start itself (pass-rate-check.ts).
 */
export function sftStopReason(targets: { nll?: number; demoProb?: number }, window: NllWindow, demoProb: number): SftStopReason | undefined {
  if (window.reached(targets.nll)) return "nll";
  if (targets.demoProb !== undefined && Number.isFinite(demoProb) && demoProb >= targets.demoProb) return "demo_prob";
  return undefined;
}
