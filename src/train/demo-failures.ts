import type { RolloutResult } from "../tasks/rollout-result.js";

/** Examples of unsolved demonstrations a warm start's log names (the rest are counted). */
const EXAMPLES = 3;

/**
 * What became of the oracle demonstrations that did not solve their task, for the warm start's log: their statuses
 * counted and the first few named with the reason each gives. An oracle solves every task it is built for, so an
 * unsolved demonstration points at the machine (a timeout on a loaded one) or a harness, and SFT trains on fewer
 * demonstrations than planned; the count alone said neither which nor why. Undefined when every one was solved.
 */
export function unsolvedDemosLine(results: readonly RolloutResult[]): string | undefined {
  const unsolved = results.filter((r) => r.status !== "ok");
  if (unsolved.length === 0) return undefined;
  const counts = new Map<string, number>();
  for (const r of unsolved) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  const byStatus = [...counts].map(([status, n]) => `${status} ${n}`).join(", ");
  const examples = unsolved.slice(0, EXAMPLES).map((r) => `${r.rolloutId}: ${r.status}, ${reasonOf(r)}`);
  const more = unsolved.length > EXAMPLES ? `; ${unsolved.length - EXAMPLES} more` : "";
  return `warm start: ${unsolved.length} demonstration(s) left out of SFT (${byStatus}): ${examples.join("; ")}${more}`;
}

function reasonOf(r: RolloutResult): string {
  const reason = r.error ?? r.verifier?.error ?? r.harnessDetail;
  // One line per example: a harness's error can be a multi-line stack.
  const line = (reason || "no reason given").split("\n")[0] ?? "";
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}
