import { posix } from "node:path";
import { BoundedOutput } from "../sandbox/bounded-output.js";
import { probeConfined } from "../sandbox/workspace.js";
import type { Sandbox } from "../sandbox/types.js";
import { verifierFilesOf } from "../tasks/materialize.js";
import { VERIFIER_DIR } from "../tasks/task.js";
import type { Task } from "../tasks/task.js";
import { nativeCounters } from "../tasks/programs/native.js";
import { runInVm, type VmEntry } from "../tasks/programs/vm-run.js";

/** The verifier's stdout as a sandboxed run keeps it. */
const VERIFIER_STDOUT_LIMIT = 64 * 1024;
/** A workspace file bigger than this is left to the sandboxed verifier (the control plane does not hold it). */
const MAX_FILE_BYTES = 1024 * 1024;
/** CPU one native run may take; past it the real verifier runs in the sandbox, under the task's own timeout. */
const NATIVE_TIMEOUT_MS = 250;
/** Runs at most: each one may name files to fetch for the next. */
const MAX_ROUNDS = 4;

export interface NativeVerification {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/**
 * Runs one of our own verifiers (native.ts) in the control plane, over exactly what its sandboxed run would see: its
 * own folder as the rollout writes it (the task's verifier files and the host's tool records, nothing the agent put
 * there), and the workspace read through confined host reads. Undefined when that cannot be done faithfully (a
 * symlink or special file it reads, a path outside the workspace, a big file, too slow, an API the native run lacks):
 * the caller then runs the verifier in the sandbox as usual.
 */
export async function verifyNatively(program: string, task: Task, sandbox: Sandbox, toolRecords: Record<string, Uint8Array>): Promise<NativeVerification | undefined> {
  const result = await attempt(program, task, sandbox, toolRecords);
  if (result) nativeCounters.verifierRuns++;
  else nativeCounters.verifierFallbacks++;
  return result;
}

async function attempt(program: string, task: Task, sandbox: Sandbox, toolRecords: Record<string, Uint8Array>): Promise<NativeVerification | undefined> {
  const ws = sandbox.paths.workspace;
  const verifierDir = posix.join(ws, VERIFIER_DIR);
  const own = new Map<string, Buffer>();
  for (const [rel, data] of Object.entries({ ...verifierFilesOf(task), ...toolRecords })) own.set(posix.join(ws, rel), Buffer.from(data));
  const fetched = new Map<string, VmEntry>();

  const lookup = (path: string): VmEntry | undefined => {
    if (path === verifierDir || path.startsWith(`${verifierDir}/`)) {
      const data = own.get(path);
      if (data) return { kind: "file", data };
      for (const known of own.keys()) if (known.startsWith(`${path}/`)) return { kind: "other", directory: true };
      return { kind: "missing" }; // the sandboxed run clears this folder before writing the verifier's files
    }
    if (path === ws) return { kind: "other", directory: true };
    return fetched.get(path);
  };

  for (let round = 0; round < MAX_ROUNDS; round++) {
    const r = runInVm(program, { args: [], scriptPath: posix.join(verifierDir, "verify.cjs"), cwd: ws, lookup, writableDir: verifierDir, timeoutMs: NATIVE_TIMEOUT_MS });
    if (r.status === "unsupported") return undefined;
    if (r.status === "done") {
      if (r.appended.size > 0) return undefined; // a verifier that writes files: leave it to the sandbox
      const stdout = new BoundedOutput(VERIFIER_STDOUT_LIMIT);
      stdout.push(r.stdout);
      return { stdout: stdout.text(), stderr: r.stderr.toString("utf8"), exitCode: r.exitCode };
    }
    for (const path of r.paths) {
      const rel = posix.relative(ws, path);
      // Outside the workspace, or in the rollout's own .harnessrl folder (which the sandboxed run tidies first).
      if (rel === "" || rel.startsWith("..") || posix.isAbsolute(rel) || rel === ".harnessrl" || rel.startsWith(".harnessrl/")) return undefined;
      const entry = await probeConfined(sandbox.workspaceDir, rel, MAX_FILE_BYTES);
      if (entry === null) return undefined;
      fetched.set(path, entry);
    }
  }
  return undefined;
}
