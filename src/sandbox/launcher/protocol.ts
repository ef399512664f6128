/**
 * Messages between the control plane and its launcher process (Node's IPC channel, JSON). Both ends are this
 * package's own code; the guards only keep a malformed message from throwing inside an event handler.
 */

/** Control plane → launcher: start a process; `fd3` is base64. */
export interface SpawnRequest {
  t: "spawn";
  id: number;
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  fd3?: string;
}

/** Control plane → launcher: SIGKILL a process it started. */
export interface KillRequest {
  t: "kill";
  id: number;
}

/** Launcher → control plane: started; the message carries the control channel (a socket) as its handle. */
export interface SpawnedReport {
  t: "spawned";
  id: number;
}

/** Launcher → control plane: ended (after its stderr closed). */
export interface ExitedReport {
  t: "exited";
  id: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  diagnostics: string;
}

export type ToLauncher = SpawnRequest | KillRequest;
export type FromLauncher = SpawnedReport | ExitedReport;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}

export function isToLauncher(v: unknown): v is ToLauncher {
  if (!isRecord(v) || typeof v.id !== "number") return false;
  if (v.t === "kill") return true;
  return v.t === "spawn" && typeof v.file === "string" && Array.isArray(v.args) && typeof v.cwd === "string" && isRecord(v.env);
}

export function isFromLauncher(v: unknown): v is FromLauncher {
  if (!isRecord(v) || typeof v.id !== "number") return false;
  return v.t === "spawned" || (v.t === "exited" && typeof v.diagnostics === "string");
}
