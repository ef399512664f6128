import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";

/** One finished evaluation of a run, as the report's table shows it. */
export interface EvaluationRow {
  label: string;
  rollouts: number;
  passAt1: number;
  /** Standard error of pass@1 (null when the file predates it). */
  stderr: number | null;
  byHarness: [string, number][];
}

const groupSchema = z.looseObject({ rollouts: z.number(), passAt1: z.number(), passAt1Stderr: z.number().optional() });
const evalSchema = z.looseObject({ overall: groupSchema, byHarness: z.record(z.string(), groupSchema).optional() });

/** The run's evaluation files, in the order they happen; a missing or unreadable file is left out. */
export const EVALUATION_FILES = ["eval-before", "eval-after", "eval"] as const;

/**
 * Reads a run's finished evaluations (eval-before.json, eval-after.json, eval.json): shown while a run is still
 * going, when summary.json (which has the paired change) is not written yet.
 */
export function readEvaluations(runDir: string): EvaluationRow[] {
  const out: EvaluationRow[] = [];
  for (const label of EVALUATION_FILES) {
    const path = join(runDir, `${label}.json`);
    if (!existsSync(path)) continue;
    let parsed;
    try {
      parsed = evalSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
    } catch {
      continue;
    }
    if (!parsed.success) continue;
    const e = parsed.data;
    out.push({
      label,
      rollouts: e.overall.rollouts,
      passAt1: e.overall.passAt1,
      stderr: e.overall.passAt1Stderr ?? null,
      byHarness: Object.entries(e.byHarness ?? {}).map(([h, g]) => [h, g.passAt1]),
    });
  }
  return out;
}
