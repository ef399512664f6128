import { Worker } from "node:worker_threads";
import { compiledScript } from "../core/compiled-script.js";

/**
 * WAL checkpoints off the writer's thread. SQLite's default checkpoints from inside the commit that crosses 1,000 WAL
 * pages: every ~100th proxy call paid for copying ~4 MB and two fsyncs (bench:proxy: ~40 µs a call on average and
 * most of its p90). A worker thread with its own connection checkpoints a few times a second instead; the writer keeps
 * a large autocheckpoint as a safety net should the worker fall behind or fail.
 */
export const WRITER_AUTOCHECKPOINT_PAGES = 16_384;
const CHECKPOINT_INTERVAL_MS = 200;

/** The compiled worker next to this module, or in dist/ when this module runs from its TypeScript source (tests). */
function workerFile(): string | undefined {
  return compiledScript(new URL("./checkpoint-worker.js", import.meta.url));
}

export class Checkpointer {
  private worker: Worker | null;

  /** `onFailure` runs once if the worker cannot run (the writer then goes back to checkpointing itself). */
  private constructor(worker: Worker, onFailure: () => void) {
    this.worker = worker;
    worker.unref();
    worker.on("error", () => {
      this.worker = null;
      onFailure();
    });
  }

  /** A checkpointer for the store at `path`, or null when the worker script is not built (the writer checkpoints). */
  static start(path: string, onFailure: () => void): Checkpointer | null {
    const file = workerFile();
    if (file === undefined) return null;
    return new Checkpointer(new Worker(file, { workerData: { path, intervalMs: CHECKPOINT_INTERVAL_MS } }), onFailure);
  }

  close(): void {
    this.worker?.postMessage("close");
    this.worker = null;
  }
}
