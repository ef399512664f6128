import { readFile, rm, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { UserError } from "../core/errors.js";
import { writeFileMap } from "./materialize.js";
import { isDirectory, readTree } from "./read-tree.js";
import { formatIssues, taskSchema, verifierSpecSchema, type Task } from "./task.js";

/**
 * Our own suite layout, one folder per task:
 *   <task>/task.json   {id, family, split, prompt, verifier: {command, timeoutMs?}, metadata}
 *   <task>/files/**    workspace files (executable bit kept)
 *   <task>/verifier/** verifier files (installed under .harnessrl/verifier/)
 */
export const TASK_JSON = "task.json";

const taskJsonSchema = taskSchema.omit({ files: true, verifier: true }).extend({
  verifier: verifierSpecSchema.omit({ files: true }),
});

export function parseJsonFile(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UserError("invalid_task", `${file}: not valid JSON (${(e as Error).message})`);
  }
}

export async function loadNativeTask(dir: string): Promise<Task> {
  const file = join(dir, TASK_JSON);
  const raw = parseJsonFile(await readFile(file, "utf8"), file);
  const head = taskJsonSchema.safeParse(raw);
  if (!head.success) throw new UserError("invalid_task", `${file}: ${formatIssues(head.error)}`);
  const files = (await isDirectory(join(dir, "files"))) ? await readTree(join(dir, "files")) : {};
  const verifierDir = join(dir, "verifier");
  const verifierFiles = (await isDirectory(verifierDir)) ? await readTree(verifierDir) : {};
  const task = taskSchema.safeParse({ ...head.data, files, verifier: { ...head.data.verifier, files: verifierFiles } });
  if (!task.success) throw new UserError("invalid_task", `${dir}: ${formatIssues(task.error)}`);
  return task.data;
}

/** Writes tasks in the native layout (one folder per task id), replacing existing task folders of the same id. */
export async function writeNativeSuite(tasks: Task[], root: string): Promise<void> {
  await mkdir(root, { recursive: true });
  for (const task of tasks) {
    const dir = join(root, task.id);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const { files, verifier, ...head } = task;
    const { files: verifierFiles, ...verifierHead } = verifier;
    await writeFile(join(dir, TASK_JSON), `${JSON.stringify({ ...head, verifier: verifierHead }, null, 2)}\n`);
    await writeFileMap(join(dir, "files"), files);
    await writeFileMap(join(dir, "verifier"), verifierFiles);
  }
}

