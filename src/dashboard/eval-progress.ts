import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { journalHeaderSchema } from "../eval/journal.js";

/** An evaluation of a run as its journal shows it while it runs (src/eval/journal.ts). */
export interface EvalProgress {
  /** `eval-before`, `eval-<step>`, `eval-after`, or the CLI command (`eval`, `rollout`). */
  label: string;
  policy: string;
  done: number;
  total: number;
  /** Rollouts that scored 1 among those that were not infrastructure errors, and their share (null before any). */
  passed: number;
  passAt1: number | null;
  /** The journal's last change (ms since the epoch). */
  updatedAt: number;
}

/** The journals a run directory can hold: a training run's evals/<label>.jsonl, an eval/rollout job's <command>-journal.jsonl. */
function journalPaths(dir: string): string[] {
  const evals = join(dir, "evals");
  const inRun = existsSync(evals) ? readdirSync(evals).filter((e) => e.endsWith(".jsonl")).map((e) => join(evals, e)) : [];
  const jobs = readdirSync(dir).filter((e) => e.endsWith("-journal.jsonl")).map((e) => join(dir, e));
  return [...inRun, ...jobs];
}

/** One journal's progress; null when it is not a journal (its lines are counted, never trusted further). */
function progressOf(path: string, updatedAt: number): EvalProgress | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return null;
  }
  const lines = text.split("\n");
  let header;
  try {
    header = journalHeaderSchema.safeParse(JSON.parse(lines[0] ?? ""));
  } catch {
    return null;
  }
  if (!header.success) return null;
  let done = 0;
  let valid = 0;
  let passed = 0;
  // The last element is "" after a complete line, or a line still being written: not counted.
  for (const line of lines.slice(1, -1)) {
    let r: unknown;
    try {
      r = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof r !== "object" || r === null) continue;
    const { status, score } = r as { status?: unknown; score?: unknown };
    done++;
    if (status === "infra_error") continue;
    valid++;
    if (typeof score === "number" && score >= 1) passed++;
  }
  return { label: header.data.label, policy: header.data.policy, done, total: header.data.rollouts, passed, passAt1: valid > 0 ? passed / valid : null, updatedAt };
}

/**
 * The evaluation a run is in the middle of: its most recently changed journal, while it has fewer results than it
 * plans. A finished or abandoned one (a killed run that has not resumed) is not "in progress" once the run's own
 * status says it stopped; this reader only reports what the files say.
 */
export class EvalProgressReader {
  private stamp = "";
  private value: EvalProgress | null = null;

  constructor(private readonly dir: string) {}

  /** Re-reads only when a journal's size or modification time changed. */
  current(): EvalProgress | null {
    let paths: string[];
    try {
      paths = journalPaths(this.dir);
    } catch {
      return null;
    }
    const stats = paths.flatMap((p) => {
      try {
        const st = statSync(p);
        return [{ path: p, mtime: st.mtimeMs, size: st.size }];
      } catch {
        return [];
      }
    });
    const newest = stats.sort((a, b) => b.mtime - a.mtime)[0];
    const stamp = newest ? `${newest.path}:${newest.mtime}:${newest.size}` : "";
    if (stamp !== this.stamp) {
      this.stamp = stamp;
      const p = newest ? progressOf(newest.path, newest.mtime) : null;
      this.value = p && p.done < p.total ? p : null;
    }
    return this.value;
  }
}
