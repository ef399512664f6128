import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { z } from "zod";
import { UserError } from "../core/errors.js";
import { parseJsonFile } from "./layout-native.js";
import { CLAWGYM_ADAPTER } from "./programs/clawgym-adapter.js";
import { isDirectory, isFile, readTree } from "./read-tree.js";
import { formatIssues, taskSchema, VERIFIER_DIR, type FileMap, type Split, type Task } from "./task.js";

/**
 * The ClawGym-Bench layout, loaded unchanged:
 *   task_XXXX/data_entry.json  {task_id, user_query, input_mount_dir?, metadata?}
 *   task_XXXX/input_files/**   copied into the workspace root
 *   task_XXXX/reward/reward.sh prints the score (mean in [0, 1]); reward/check.py prints sub-scores as JSON
 * The verifier is our adapter (programs/clawgym-adapter.ts) around reward.sh; reward/ is installed as
 * `.harnessrl/verifier/reward/` and copied into the workspace's `reward/` by the adapter at verification time.
 */
export const DATA_ENTRY_JSON = "data_entry.json";
export const CLAWGYM_FAMILY = "clawgym";

const dataEntrySchema = z.looseObject({
  task_id: z.union([z.string().min(1), z.number()]),
  user_query: z.string().min(1),
  input_mount_dir: z.string().min(1).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

export interface ClawGymOptions {
  /** Split for tasks whose metadata names none (ClawGym-Bench is an evaluation set: default "test"). */
  defaultSplit?: Split;
  /** Absolute workspace path the harness sees; replaces `input_mount_dir` in the prompt. Default /workspace. */
  workspaceRoot?: string;
}

export async function loadClawGymTask(dir: string, options: ClawGymOptions = {}): Promise<Task> {
  const file = join(dir, DATA_ENTRY_JSON);
  const parsed = dataEntrySchema.safeParse(parseJsonFile(await readFile(file, "utf8"), file));
  if (!parsed.success) throw new UserError("invalid_task", `${file}: ${formatIssues(parsed.error)}`);
  const entry = parsed.data;
  const rewardSh = join(dir, "reward", "reward.sh");
  if (!(await isFile(rewardSh))) throw new UserError("invalid_task", `${rewardSh}: missing (every ClawGym task needs reward/reward.sh)`);

  const metaSplit = entry.metadata?.["split"];
  const split: Split = metaSplit === "train" || metaSplit === "test" ? metaSplit : (options.defaultSplit ?? "test");
  const mount = entry.input_mount_dir;
  const root = options.workspaceRoot ?? "/workspace";
  const prompt = mount ? entry.user_query.split(mount.replace(/\/+$/, "")).join(root) : entry.user_query;
  const files = (await isDirectory(join(dir, "input_files"))) ? await readTree(join(dir, "input_files")) : {};
  const reward = await readTree(join(dir, "reward"));
  const verifierFiles: FileMap = { "clawgym_adapter.cjs": CLAWGYM_ADAPTER };
  for (const [rel, content] of Object.entries(reward)) verifierFiles[`reward/${rel}`] = content;
  const rawId = String(entry.task_id);
  const id = rawId.replace(/[^A-Za-z0-9._-]/g, "_");

  const task = taskSchema.safeParse({
    id,
    family: CLAWGYM_FAMILY,
    split,
    prompt,
    files,
    verifier: {
      files: verifierFiles,
      command: ["node", `${VERIFIER_DIR}/clawgym_adapter.cjs`, ...(mount ? ["--mount", mount] : [])],
    },
    // ClawGym metadata is kept whole under `clawgym` so its fields never clash with ours (e.g. a string difficulty).
    metadata: { clawgym: { task_id: rawId, input_mount_dir: mount ?? null, dir: basename(dir), metadata: entry.metadata ?? {} } },
  });
  if (!task.success) throw new UserError("invalid_task", `${dir}: ${formatIssues(task.error)}`);
  return task.data;
}
