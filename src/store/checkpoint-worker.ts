/**
 * Worker thread of `Checkpointer`: its own connection to the store copies committed WAL frames into the database file
 * (a PASSIVE checkpoint never blocks the writer), so the proxy's thread never pays for a checkpoint and its fsyncs.
 */
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

interface CheckpointWorkerData {
  path: string;
  intervalMs: number;
}

const { path, intervalMs } = workerData as CheckpointWorkerData;
const db = new Database(path, { fileMustExist: true });
db.pragma("busy_timeout = 0");
// This connection only checkpoints; it must never start one of its own on a write (it never writes).
db.pragma("wal_autocheckpoint = 0");

const timer = setInterval(() => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // Busy (another checkpointer) or a transient I/O error: the next tick tries again, and the writer's own
    // autocheckpoint stays as the safety net.
  }
}, intervalMs);

parentPort?.on("message", (m: unknown) => {
  if (m !== "close") return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
