import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { z } from "zod";
import { UserError } from "../core/errors.js";
import { CLAWGYM_ADAPTER, CLAWGYM_MANIFEST } from "./programs/clawgym-adapter.js";
import { isDirectory, isFile, readTree } from "./read-tree.js";
import { formatIssues, oracleSchema, taskSchema, VERIFIER_DIR, type FileMap, type Oracle, type Split, type Task } from "./task.js";

/**
 * The ClawGym-Bench layout, loaded unchanged:
 *   task_XXXX/data_entry.json  {task_id, user_query, input_mount_dir?, metadata?}
 *   task_XXXX/input_files/**   copied into the workspace root
 *   task_XXXX/reward/reward.sh prints the score (mean in [0, 1]); reward/check.py prints sub-scores as JSON
 *   task_XXXX/oracle.json      optional, ours (not ClawGym's): {steps, answer?} solving the task, for the oracle engine
 *                              and `harnessrl tasks check`; ClawGym's own tools ignore the file
 * The verifier is our adapter (programs/clawgym-adapter.ts) around reward.sh; reward/ is installed as
 * `.harnessrl/verifier/reward/` and copied into the workspace's `reward/` by the adapter at verification time.
 * Every problem with a task folder is a UserError `invalid_clawgym_task` naming the file and the field.
 */
export const DATA_ENTRY_JSON = "data_entry.json";
export const ORACLE_JSON = "oracle.json";
export const CLAWGYM_FAMILY = "clawgym";

/** Workspace paths a task's input files may not use: the grader's `reward/` replaces the first, we own the second. */
const RESERVED_INPUT_DIRS = ["reward", ".harnessrl"];

const dataEntrySchema = z.looseObject({
  task_id: z.union([z.string().trim().min(1, "must not be empty"), z.number().int().nonnegative()]),
  user_query: z.string().refine((q) => q.trim().length > 0, "must not be empty"),
  input_mount_dir: z
    .string()
    .refine((p) => p.startsWith("/") && p.replace(/\/+$/, "").length > 0 && !p.includes("\u0000"), "must be an absolute path other than /")
    .optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

export interface ClawGymOptions {
  /** Split for tasks whose metadata names none (ClawGym-Bench is an evaluation set: default "test"). */
  defaultSplit?: Split;
  /** Absolute workspace path the harness sees; replaces `input_mount_dir` in the prompt. Default /workspace. */
  workspaceRoot?: string;
}

function invalid(where: string, why: string): UserError {
  return new UserError("invalid_clawgym_task", `${where}: ${why}`);
}

/** readTree, with its errors (symlinks, sockets) reported under this layout's code. */
async function readTaskTree(dir: string): Promise<FileMap> {
  try {
    return await readTree(dir);
  } catch (e) {
    if (e instanceof UserError) throw invalid(dir, e.message);
    throw e;
  }
}

async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    throw invalid(file, `cannot be read (${(e as Error).message})`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw invalid(file, `not valid JSON (${(e as Error).message})`);
  }
}

async function readDataEntry(file: string): Promise<z.infer<typeof dataEntrySchema>> {
  const parsed = dataEntrySchema.safeParse(await readJson(file));
  if (!parsed.success) throw invalid(file, formatIssues(parsed.error));
  return parsed.data;
}

async function readOracle(file: string): Promise<Oracle | undefined> {
  if (!(await isFile(file))) return undefined;
  const parsed = oracleSchema.safeParse(await readJson(file));
  if (!parsed.success) throw invalid(file, formatIssues(parsed.error));
  return parsed.data;
}

export async function loadClawGymTask(dir: string, options: ClawGymOptions = {}): Promise<Task> {
  const entry = await readDataEntry(join(dir, DATA_ENTRY_JSON));
  const rewardDir = join(dir, "reward");
  if (!(await isDirectory(rewardDir))) throw invalid(rewardDir, "missing (every ClawGym task needs reward/reward.sh)");
  const rewardSh = join(rewardDir, "reward.sh");
  if (!(await isFile(rewardSh))) throw invalid(rewardSh, "missing or not a regular file (every ClawGym task needs reward/reward.sh)");
  const inputDir = join(dir, "input_files");
  let files: FileMap = {};
  if (await isDirectory(inputDir)) files = await readTaskTree(inputDir);
  else if (await isFile(inputDir)) throw invalid(inputDir, "must be a folder");
  for (const rel of Object.keys(files)) {
    const top = rel.split("/")[0] ?? "";
    if (RESERVED_INPUT_DIRS.includes(top)) throw invalid(join(inputDir, rel), `input files may not lie under ${top}/ (reserved for the grader)`);
  }

  const metaSplit = entry.metadata?.["split"];
  const split: Split = metaSplit === "train" || metaSplit === "test" ? metaSplit : (options.defaultSplit ?? "test");
  const mount = entry.input_mount_dir?.replace(/\/+$/, "");
  const root = options.workspaceRoot ?? "/workspace";
  const prompt = mount ? entry.user_query.split(mount).join(root) : entry.user_query;
  const reward = await readTaskTree(rewardDir);
  const verifierFiles: FileMap = {
    "clawgym_adapter.cjs": CLAWGYM_ADAPTER,
    [CLAWGYM_MANIFEST]: `${JSON.stringify({ files: Object.keys(reward) })}\n`,
  };
  for (const [rel, content] of Object.entries(reward)) verifierFiles[`reward/${rel}`] = content;
  const oracle = await readOracle(join(dir, ORACLE_JSON));
  const rawId = String(entry.task_id).trim();
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
    metadata: {
      clawgym: { task_id: rawId, input_mount_dir: mount ?? null, dir: basename(dir), metadata: entry.metadata ?? {} },
      ...(oracle ? { oracle } : {}),
    },
  });
  if (!task.success) throw invalid(dir, formatIssues(task.error));
  return task.data;
}
