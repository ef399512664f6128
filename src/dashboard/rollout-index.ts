/** A finished rollout as the rollouts table lists it (from its rollouts.jsonl line). */
export interface RolloutRow {
  rolloutId: string;
  /** The RL step whose batch it belongs to (`s<step>-…` ids), null for other ids. */
  step: number | null;
  taskId: string;
  harness: string;
  family: string;
  split: string;
  sample: number;
  status: string;
  score: number;
  calls: number;
  durationMs: number | null;
  error: string | null;
}

export interface RolloutQuery {
  step?: number;
  harness?: string;
  task?: string;
  family?: string;
  status?: string;
  sort?: "reward" | "-reward" | "order" | "-order";
  offset?: number;
  limit?: number;
}

export interface RolloutPage {
  total: number;
  rows: RolloutRow[];
  /** Distinct values present, for the table's filter menus. */
  facets: { steps: number[]; harnesses: string[]; families: string[]; statuses: string[] };
}

/** Kept per rollout for its page: the result line minus the bulk of the harness's output. */
const MAX_OUTPUT = 4000;

const str = (v: unknown, d = ""): string => (typeof v === "string" ? v : d);
const num = (v: unknown, d = 0): number => (typeof v === "number" && Number.isFinite(v) ? v : d);

function tail(s: string): string {
  return s.length > MAX_OUTPUT ? `…${s.slice(-MAX_OUTPUT)}` : s;
}

/** The rollouts of one run in file order, filtered, sorted and paged in memory (a run's rollouts number thousands, not millions). */
export class RolloutIndex {
  private readonly rows: RolloutRow[] = [];
  private readonly results = new Map<string, Record<string, unknown>>();

  clear(): void {
    this.rows.length = 0;
    this.results.clear();
  }

  get size(): number {
    return this.rows.length;
  }

  add(lines: Record<string, unknown>[]): RolloutRow[] {
    const added: RolloutRow[] = [];
    for (const r of lines) {
      const rolloutId = str(r.rolloutId);
      if (!rolloutId) continue;
      const step = /^s(\d+)-/.exec(rolloutId)?.[1];
      const timings = (r.timings ?? {}) as Record<string, unknown>;
      const row: RolloutRow = {
        rolloutId,
        step: step === undefined ? null : Number(step),
        taskId: str(r.taskId),
        harness: str(r.harness),
        family: str(r.family),
        split: str(r.split),
        sample: num(r.sample),
        status: str(r.status, "unknown"),
        score: num(r.score),
        calls: num(r.calls),
        durationMs: typeof timings.endedAt === "number" && typeof timings.startedAt === "number" ? timings.endedAt - timings.startedAt : null,
        error: typeof r.error === "string" ? r.error : null,
      };
      this.rows.push(row);
      this.results.set(rolloutId, { ...r, stdout: tail(str(r.stdout)), stderr: tail(str(r.stderr)) });
      added.push(row);
    }
    return added;
  }

  /** Ids of the rollouts from position `from` on (file order). */
  idsFrom(from: number): string[] {
    return this.rows.slice(from).map((r) => r.rolloutId);
  }

  result(rolloutId: string): Record<string, unknown> | null {
    return this.results.get(rolloutId) ?? null;
  }

  /** The rollouts of the same GRPO group (task × harness, within one step): what its advantages are relative to. */
  group(rolloutId: string): RolloutRow[] {
    const me = this.rows.find((r) => r.rolloutId === rolloutId);
    if (!me) return [];
    return this.rows.filter((r) => r.step === me.step && r.taskId === me.taskId && r.harness === me.harness && (me.step !== null || r.rolloutId.split("-")[0] === me.rolloutId.split("-")[0]));
  }

  query(q: RolloutQuery): RolloutPage {
    const matches = this.rows.filter(
      (r) =>
        (q.step === undefined || r.step === q.step) &&
        (q.harness === undefined || r.harness === q.harness) &&
        (q.task === undefined || r.taskId.includes(q.task)) &&
        (q.family === undefined || r.family === q.family) &&
        (q.status === undefined || r.status === q.status),
    );
    const indexed = matches.map((r, i) => ({ r, i }));
    const sort = q.sort ?? "-order";
    const dir = sort.startsWith("-") ? -1 : 1;
    if (sort.endsWith("reward")) indexed.sort((a, b) => dir * (a.r.score - b.r.score) || a.i - b.i);
    else if (dir === -1) indexed.reverse();
    const offset = Math.max(0, Math.floor(q.offset ?? 0));
    const limit = Math.min(500, Math.max(0, Math.floor(q.limit ?? 50)));
    const distinct = <T>(f: (r: RolloutRow) => T | null): T[] => [...new Set(this.rows.map(f).filter((v): v is T => v !== null && v !== ""))];
    return {
      total: matches.length,
      rows: indexed.slice(offset, offset + limit).map((x) => x.r),
      facets: {
        steps: distinct((r) => r.step).sort((a, b) => a - b),
        harnesses: distinct((r) => r.harness).sort(),
        families: distinct((r) => r.family).sort(),
        statuses: distinct((r) => r.status).sort(),
      },
    };
  }
}
