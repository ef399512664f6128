/**
 * Progress on the terminal for long work: on a TTY one line rewritten in place, otherwise a line every `everyMs`
 * (CI logs stay readable). Writes to stderr so stdout stays machine-readable.
 */
export class Progress {
  private lastPrint = 0;
  private readonly tty: boolean;
  private readonly started = Date.now();

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly everyMs = 5_000,
    private readonly out: NodeJS.WriteStream = process.stderr,
  ) {
    this.tty = Boolean(out.isTTY);
  }

  update(done: number, detail = ""): void {
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
