import { chmod, mkdir, writeFile } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { InfraError, UserError } from "../core/errors.js";
import { fileBytes, VERIFIER_DIR, type FileMap, type Task } from "./task.js";

/** Joins a validated relative path under root, refusing anything that would escape it. */
export function safeJoin(root: string, rel: string): string {
  const base = resolve(root);
  const full = resolve(base, rel);
  if (full !== base && !full.startsWith(base + sep)) throw new UserError("task_path_escape", `path "${rel}" escapes ${root}`);
  return full;
}

/** Writes a file map under `root` (creating folders; executables get mode 0755). */
export async function writeFileMap(root: string, files: FileMap): Promise<void> {
  for (const [rel, entry] of Object.entries(files)) {
    const path = safeJoin(root, rel);
    const { data, executable } = fileBytes(entry);
    try {
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, data);
      if (executable) await chmod(path, 0o755);
    } catch (e) {
      throw new InfraError("task_write_failed", `cannot write ${path}: ${(e as Error).message}`, { cause: e, retryable: true });
    }
  }
}

/** Seeds a workspace folder with the task's files (what the agent starts from). */
export async function seedWorkspace(task: Task, workspace: string): Promise<void> {
  await mkdir(workspace, { recursive: true });
  await writeFileMap(workspace, task.files);
}

/** Installs the verifier files under {@link VERIFIER_DIR} of a workspace; call only after the agent is done. */
export async function installVerifier(task: Task, workspace: string): Promise<string> {
  const dir = join(workspace, VERIFIER_DIR);
  await writeFileMap(dir, task.verifier.files);
  return dir;
}

/**
 * The task's workspace files as bytes, for sandbox backends that take a path → content map (they write mode 0644):
 * `executables` lists the paths that must then be made executable (`chmod +x`), e.g. `calc` and `search`.
 * Alternatively seed a host folder with {@link seedWorkspace} and copy it (fs.cp keeps the modes).
 */
export function workspaceSeedOf(task: Task): { files: Record<string, Uint8Array>; executables: string[] } {
  const files: Record<string, Uint8Array> = {};
  const executables: string[] = [];
  for (const [rel, entry] of Object.entries(task.files)) {
    const { data, executable } = fileBytes(entry);
    files[rel] = data;
    if (executable) executables.push(rel);
  }
  return { files, executables };
}

/** The verifier files keyed by their workspace-relative destination under {@link VERIFIER_DIR}. */
export function verifierFilesOf(task: Task): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const [rel, entry] of Object.entries(task.verifier.files)) out[`${VERIFIER_DIR}/${rel}`] = fileBytes(entry).data;
  return out;
}
