import { createHash } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import { rolloutResultSchema, type RolloutRequest, type RolloutResult } from "../tasks/rollout-result.js";

/** The evaluation a journal belongs to: a result for another policy or plan is never counted. */
export interface EvalJournalKey {
  label: string;
  /**
   * What is evaluated: in a training run the policy version (`v3`); for `harnessrl eval` / `rollout` a digest of the
   * engine, the model directory's files and the sampling and rollout settings.
   */
  policy: string;
  taskIds: readonly string[];
  harnesses: readonly string[];
  samples: number;
  /** The evaluation's common-random-numbers key, if it has one: results drawn with other seeds are not its results. */
  samplingSeeds?: string;
}

const JOURNAL_VERSION = 1;

export const journalHeaderSchema = z.strictObject({
  journal: z.literal("harnessrl-eval"),
  version: z.literal(JOURNAL_VERSION),
  label: z.string(),
  policy: z.string(),
  plan: z.string(),
  /** Rollouts the evaluation plans (tasks × harnesses × samples): how far along it is, for the dashboard. */
  rollouts: z.number().int().min(0),
});
type Header = z.infer<typeof journalHeaderSchema>;

/** What opening a journal found, for the run's log. */
export interface JournalOpening {
  /** A file of this evaluation was there: an earlier attempt ran (its records exist, even if it finished nothing). */
  resumed: boolean;
  kept: number;
  /** Why an existing file was not continued (another evaluation's, unreadable), if one was there. */
  restarted?: string;
  /** A last line cut by a kill mid-write, dropped (its rollout runs again). */
  tornTail: boolean;
}

/** A rollout's place in a plan, whichever attempt ran it: (task, harness, sample). */
export const rolloutKey = (r: Pick<RolloutRequest, "taskId" | "harness" | "sample">): string => `${r.taskId}\u0000${r.harness}\u0000${r.sample}`;

function planDigest(key: EvalJournalKey): string {
  // The seeds join the digest only when set, so journals written before the key existed keep their digest.
  const seeds = key.samplingSeeds === undefined ? {} : { samplingSeeds: key.samplingSeeds };
  return createHash("sha256").update(JSON.stringify({ tasks: key.taskIds, harnesses: key.harnesses, samples: key.samples, ...seeds })).digest("hex").slice(0, 16);
}

/**
 * Crash-safe progress of one evaluation (or rollout job): each finished rollout's result is appended as a JSON line, so
 * a run killed mid-evaluation (a real CLI's evaluation of 160 tasks takes most of an hour on 2 cores) resumes with the
 * rollouts that are done and runs only the rest. The first line names the evaluation (label, policy, a digest of its
 * tasks, harnesses and samples); a file that names another one is started afresh. Every result line is
 * validated as it is read back (the run directory is not trusted more than a rollout node's answer): a last line cut by
 * a kill is dropped, anything else unreadable or outside the plan restarts the evaluation rather than count it.
 */
export class EvalJournal {
  private readonly results: RolloutResult[] = [];
  private readonly keys = new Set<string>();

  private constructor(
    readonly path: string,
    private readonly header: Header,
  ) {}

  /** Opens the journal at `path` for `key`, continuing a file that belongs to the same evaluation. */
  static open(path: string, key: EvalJournalKey): { journal: EvalJournal; opening: JournalOpening } {
    const header: Header = { journal: "harnessrl-eval", version: JOURNAL_VERSION, label: key.label, policy: key.policy, plan: planDigest(key), rollouts: key.taskIds.length * key.harnesses.length * key.samples };
    const journal = new EvalJournal(path, header);
    const opening: JournalOpening = { resumed: false, kept: 0, tornTail: false };
    if (existsSync(path)) {
      const verdict = journal.readBack(readFileSync(path, "utf8"), key);
      if (typeof verdict === "string") {
        opening.restarted = verdict;
        journal.results.length = 0;
        journal.keys.clear();
      } else {
        opening.resumed = true;
        opening.kept = journal.results.length;
        opening.tornTail = verdict.tornAt !== null;
        if (verdict.tornAt !== null) truncateSync(path, verdict.tornAt);
        return { journal, opening };
      }
    }
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${JSON.stringify(header)}\n`);
    return { journal, opening };
  }

  /** Results read back or appended so far, in the order they finished. */
  get done(): readonly RolloutResult[] {
    return this.results;
  }

  /** Whether this (task, harness, sample) already has a result. */
  has(request: Pick<RolloutRequest, "taskId" | "harness" | "sample">): boolean {
    return this.keys.has(rolloutKey(request));
  }

  append(result: RolloutResult): void {
    appendFileSync(this.path, `${JSON.stringify(result)}\n`);
    this.results.push(result);
    this.keys.add(rolloutKey(result));
  }

  /** Fills the results from `text`; a string says why the file cannot be continued. */
  private readBack(text: string, key: EvalJournalKey): string | { tornAt: number | null } {
    const lines = text.split("\n");
    const headerLine = lines[0] ?? "";
    if (lines.length < 2) return "its header line is incomplete";
    let header: unknown;
    try {
      header = JSON.parse(headerLine);
    } catch {
      return "its first line is not a journal header";
    }
    const parsed = journalHeaderSchema.safeParse(header);
    if (!parsed.success) return "its first line is not a journal header";
    const h = parsed.data;
    if (h.label !== this.header.label || h.policy !== this.header.policy || h.plan !== this.header.plan) {
      return `it belongs to another evaluation (${h.label}, policy ${h.policy}, plan ${h.plan})`;
    }
    const tasks = new Set(key.taskIds);
    const harnesses = new Set(key.harnesses);
    let offset = Buffer.byteLength(headerLine) + 1;
    // A file that ends without a newline was cut inside its last line (split leaves "" after a complete one); offsets
    // are bytes, for truncation.
    const last = lines.length - 1;
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i] as string;
      if (i === last) return line === "" ? { tornAt: null } : { tornAt: offset };
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        return `line ${i + 1} is not JSON`;
      }
      const r = rolloutResultSchema.safeParse(value);
      if (!r.success) return `line ${i + 1} is not a rollout result`;
      const result = r.data;
      if (!tasks.has(result.taskId) || !harnesses.has(result.harness) || result.sample >= key.samples) return `line ${i + 1} is outside the evaluation's plan`;
      if (this.keys.has(rolloutKey(result))) return `line ${i + 1} repeats a rollout`;
      this.results.push(result);
      this.keys.add(rolloutKey(result));
      offset += Buffer.byteLength(line) + 1;
    }
    return { tornAt: null };
  }
}
