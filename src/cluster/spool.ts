import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { RolloutBundle } from "../store/types.js";

/**
 * Finished rollouts a node could not ship yet (the central store was unreachable): one JSON file per bundle, written
 * to a temporary name, fsynced and renamed, so a node killed mid-write leaves either the whole bundle or none.
 */
export class BundleSpool {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  private fileOf(b: { rolloutId: string; attempt: number }): string {
    return join(this.dir, `${encodeURIComponent(b.rolloutId)}.${b.attempt}.json`);
  }

  put(bundle: RolloutBundle, store: string): void {
    const file = this.fileOf(bundle);
    const tmp = `${file}.tmp`;
    const fd = openSync(tmp, "w");
    try {
      writeSync(fd, JSON.stringify({ store, bundle }));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  }

  /** Spooled bundles with the store each goes to, oldest name first; unreadable files are skipped (and reported by name). */
  list(): { file: string; store: string; bundle: RolloutBundle | null }[] {
    const names = readdirSync(this.dir).filter((n) => n.endsWith(".json")).sort();
    return names.map((n) => {
      const file = join(this.dir, n);
      try {
        const entry = JSON.parse(readFileSync(file, "utf8")) as { store: string; bundle: RolloutBundle };
        return { file, store: entry.store, bundle: entry.bundle };
      } catch {
        return { file, store: "", bundle: null };
      }
    });
  }

  remove(file: string): void {
    unlinkSync(file);
  }

  get size(): number {
    return readdirSync(this.dir).filter((n) => n.endsWith(".json")).length;
  }
}
