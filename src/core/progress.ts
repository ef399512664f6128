/** One piece of long work as a progress line shows it (what a ProgressSink receives on every update). */
export interface ProgressUpdate {
  label: string;
  done: number;
  total: number;
  detail: string;
  /** When the work started (ms since the epoch). */
  startedAt: number;
}

/** Somewhere else to report progress to besides the terminal (a run directory's progress.json for the dashboard). */
export interface ProgressSink {
  update(p: ProgressUpdate): void;
}

export interface ProgressOptions {
  /** Off a TTY, at most one line per this many ms (the sink still gets every update). */
  everyMs?: number;
  out?: NodeJS.WriteStream;
  sink?: ProgressSink | null;
}

/**
 * Progress on the terminal for long work: on a TTY one line rewritten in place, otherwise a line every `everyMs`
 * (CI logs stay readable). Writes to stderr so stdout stays machine-readable.
 */
export class Progress {
  private lastPrint = 0;
  private readonly tty: boolean;
  private readonly started = Date.now();
  private readonly everyMs: number;
  private readonly out: NodeJS.WriteStream;
  private readonly sink: ProgressSink | null;

  constructor(
    private readonly label: string,
    private readonly total: number,
    options: ProgressOptions = {},
  ) {
    this.everyMs = options.everyMs ?? 5_000;
    this.out = options.out ?? process.stderr;
    this.sink = options.sink ?? null;
    this.tty = Boolean(this.out.isTTY);
    // The sink shows the work from its start, not from its first finished unit: a real CLI's first rollout or a
    // warm start's first demonstration can take minutes, and work whose units all finish together would never show.
    this.sink?.update({ label, done: 0, total, detail: "", startedAt: this.started });
  }

  /**
   * The work ended short of its total (a stopping rule, a time cap): the sink stops showing it. Prints nothing; the
   * caller logs why.
   */
  close(): void {
    this.sink?.update({ label: this.label, done: this.total, total: this.total, detail: "", startedAt: this.started });
  }

  update(done: number, detail = ""): void {
    this.sink?.update({ label: this.label, done, total: this.total, detail, startedAt: this.started });
    const now = Date.now();
    const finished = done >= this.total;
    if (!this.tty && !finished && now - this.lastPrint < this.everyMs) return;
    this.lastPrint = now;
    const secs = (now - this.started) / 1000;
    const eta = done > 0 && !finished ? ` eta ${Math.round((secs / done) * (this.total - done))}s` : "";
    const line = `[${this.label}] ${done}/${this.total} ${secs.toFixed(0)}s${eta}${detail ? ` ${detail}` : ""}`;
    if (this.tty) this.out.write(`\r\x1b[2K${line}${finished ? "\n" : ""}`);
    else this.out.write(`${line}\n`);
  }
}
