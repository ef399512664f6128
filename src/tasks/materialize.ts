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
