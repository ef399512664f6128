import { closeSync, openSync, readSync, statSync } from "node:fs";

/** Most bytes one poll reads: a huge backlog is taken in bounded slices over successive polls. */
const MAX_READ = 8 << 20;

/**
 * Reads a growing JSONL file incrementally: each `poll` returns the objects of the complete lines appended since the
 * last one (a torn last line waits for its newline). A file that shrank (a resumed run truncates metrics.jsonl to its
 * committed length) is read again from the start and reported as `reset`.
 */
export class JsonlTail {
  private offset = 0;
  private partial: Buffer = Buffer.alloc(0);
  skipped = 0;

  constructor(readonly path: string) {}

  poll(): { rows: Record<string, unknown>[]; reset: boolean } {
    let size: number;
    try {
      size = statSync(this.path).size;
    } catch {
      return { rows: [], reset: false };
    }
    let reset = false;
    if (size < this.offset) {
      this.offset = 0;
      this.partial = Buffer.alloc(0);
      this.skipped = 0;
      reset = true;
    }
    if (size === this.offset) return { rows: [], reset };
    const length = Math.min(size - this.offset, MAX_READ);
    const buf = Buffer.alloc(length);
    const fd = openSync(this.path, "r");
    let n: number;
    try {
      n = readSync(fd, buf, 0, length, this.offset);
    } finally {
      closeSync(fd);
    }
    this.offset += n;
    // Lines are cut on bytes, so a character split by the read limit is decoded whole on the next poll.
    const bytes = Buffer.concat([this.partial, buf.subarray(0, n)]);
    const cut = bytes.lastIndexOf(0x0a);
    this.partial = Buffer.from(bytes.subarray(cut + 1));
    const rows: Record<string, unknown>[] = [];
    if (cut < 0) return { rows, reset };
    for (const line of bytes.subarray(0, cut).toString("utf8").split("\n")) {
      if (line.trim() === "") continue;
      try {
        const v: unknown = JSON.parse(line);
        if (v !== null && typeof v === "object" && !Array.isArray(v)) rows.push(v as Record<string, unknown>);
        else this.skipped++;
      } catch {
        this.skipped++;
      }
    }
    return { rows, reset };
  }
}
