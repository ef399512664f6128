import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { UserError } from "../core/errors.js";
import { DATA_ENTRY_JSON, loadClawGymTask, type ClawGymOptions } from "./layout-clawgym.js";
import { loadNativeTask, TASK_JSON } from "./layout-native.js";
import { isDirectory, isFile } from "./read-tree.js";
import type { Split, Task } from "./task.js";

export interface DirSuiteOptions extends ClawGymOptions {
  /** Keep only tasks of this split. */
  split?: Split;
}

async function loadTaskDir(dir: string, options: DirSuiteOptions): Promise<Task | undefined> {
  if (await isFile(join(dir, TASK_JSON))) return loadNativeTask(dir);
  if (await isFile(join(dir, DATA_ENTRY_JSON))) return loadClawGymTask(dir, options);
  return undefined;
}

/**
 * Loads a suite folder: each sub-folder holding `task.json` (native layout) or `data_entry.json` (ClawGym-Bench) is one
 * task, in name order; other sub-folders are ignored. A folder that is itself a task loads as a one-task suite.
 */
export async function loadSuiteDir(root: string, options: DirSuiteOptions = {}): Promise<Task[]> {
  if (!(await isDirectory(root))) throw new UserError("suite_not_found", `task suite folder not found: ${root}`);
  const single = await loadTaskDir(root, options);
  let tasks: Task[];
  if (single) tasks = [single];
  else {
    const names = (await readdir(root, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort();
    tasks = [];
    for (const name of names) {
      const t = await loadTaskDir(join(root, name), options);
      if (t) tasks.push(t);
    }
    if (tasks.length === 0) throw new UserError("suite_empty", `${root}: no task folders (expected sub-folders with ${TASK_JSON} or ${DATA_ENTRY_JSON})`);
  }
  const seen = new Map<string, number>();
  for (const t of tasks) seen.set(t.id, (seen.get(t.id) ?? 0) + 1);
  const dup = [...seen].find(([, n]) => n > 1);
  if (dup) throw new UserError("invalid_task", `${root}: task id "${dup[0]}" is used by ${dup[1]} tasks`);
  return options.split ? tasks.filter((t) => t.split === options.split) : tasks;
}
