import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { loadClawGymTask } from "../../src/tasks/layout-clawgym.js";
import { loadSuiteDir } from "../../src/tasks/load.js";
import { CLAWGYM_MANIFEST } from "../../src/tasks/programs/clawgym-adapter.js";
import { VERIFIER_DIR } from "../../src/tasks/task.js";
import { SOLUTIONS } from "./clawgym-solutions.js";

/** The ClawGym-Bench loader on its own (no processes): what a task becomes, and every malformed folder refused clearly. */

const EXAMPLES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "examples", "clawgym");

let tmp: string;
let n = 0;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "hrl-clawgym-layout-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function put(root: string, rel: string, content: string): Promise<void> {
  await mkdir(dirname(join(root, rel)), { recursive: true });
  await writeFile(join(root, rel), content);
}

/** A fresh valid task folder; `patch` edits it before loading. */
async function taskDir(entry: unknown = { task_id: "t1", user_query: "Do it in /mnt/ws/a.txt.", input_mount_dir: "/mnt/ws" }): Promise<string> {
  const dir = join(tmp, `task_${n++}`);
  await put(dir, "data_entry.json", typeof entry === "string" ? entry : JSON.stringify(entry));
  await put(dir, "reward/reward.sh", "echo 1\n");
  await put(dir, "input_files/a.txt", "hello\n");
  return dir;
}

async function loadError(dir: string): Promise<UserError> {
  try {
    await loadClawGymTask(dir);
  } catch (e) {
    expect(e).toBeInstanceOf(UserError);
    return e as UserError;
  }
  throw new Error("expected the load to fail");
}

describe("ClawGym-Bench loader", () => {
  it("turns a task folder into a task: prompt with the mount path rewritten, input files, reward files and their manifest", async () => {
    const dir = await taskDir();
    await put(dir, "reward/check.py", "print('{}')\n");
    await put(dir, "reward/lib/util.py", "X = 1\n");
    const t = await loadClawGymTask(dir, { workspaceRoot: "/ws" });
    expect(t).toMatchObject({ id: "t1", family: "clawgym", split: "test", prompt: "Do it in /ws/a.txt.", files: { "a.txt": "hello\n" } });
    expect(t.verifier.command).toEqual(["node", `${VERIFIER_DIR}/clawgym_adapter.cjs`, "--mount", "/mnt/ws"]);
    expect(Object.keys(t.verifier.files).sort()).toEqual(["clawgym_adapter.cjs", CLAWGYM_MANIFEST, "reward/check.py", "reward/lib/util.py", "reward/reward.sh"]);
    expect(JSON.parse(t.verifier.files[CLAWGYM_MANIFEST] as string)).toEqual({ files: ["check.py", "lib/util.py", "reward.sh"] });
  });

  it("keeps ClawGym's metadata whole, takes the split from it, maps odd ids to safe ones, trims a trailing slash off the mount", async () => {
    const dir = await taskDir({ task_id: "task 7/b", user_query: "Use /data/ws/ and /data/ws.", input_mount_dir: "/data/ws/", metadata: { split: "train", difficulty: "hard" } });
    const t = await loadClawGymTask(dir);
    expect(t.id).toBe("task_7_b");
    expect(t.split).toBe("train");
    expect(t.prompt).toBe("Use /workspace/ and /workspace.");
    expect(t.metadata["clawgym"]).toMatchObject({ task_id: "task 7/b", input_mount_dir: "/data/ws", metadata: { split: "train", difficulty: "hard" } });
    const numeric = await loadClawGymTask(await taskDir({ task_id: 42, user_query: "q" }));
    expect(numeric.id).toBe("42");
    expect(numeric.verifier.command).toEqual(["node", `${VERIFIER_DIR}/clawgym_adapter.cjs`]);
    expect((await loadClawGymTask(await taskDir({ task_id: 1, user_query: "q", metadata: { split: "dev" } }), { defaultSplit: "train" })).split).toBe("train");
  });

  it("loads the shipped examples", async () => {
    const tasks = await loadSuiteDir(EXAMPLES);
    expect(tasks.map((t) => [t.id, t.split])).toEqual([["cg-config-fix", "test"], ["cg-csv-revenue", "test"], ["cg-log-summary", "test"]]);
    for (const t of tasks) {
      expect(Object.keys(t.verifier.files)).toEqual(expect.arrayContaining(["reward/reward.sh", "reward/check.py", "reward/mean.py"]));
      // Their oracle.json is the full solution the graders are tested with.
      expect(t.metadata.oracle).toEqual({ steps: [{ kind: "run", command: SOLUTIONS[t.id]!.full.command }] });
    }
  });

  it("takes oracle steps from an optional oracle.json, and refuses a malformed one", async () => {
    const dir = await taskDir();
    expect((await loadClawGymTask(dir)).metadata.oracle).toBeUndefined();
    await put(dir, "oracle.json", JSON.stringify({ steps: [{ kind: "write", path: "a.txt", content: "done\n" }], answer: "done" }));
    expect((await loadClawGymTask(dir)).metadata.oracle).toEqual({ steps: [{ kind: "write", path: "a.txt", content: "done\n" }], answer: "done" });
    await put(dir, "oracle.json", JSON.stringify({ steps: [{ kind: "write", path: "../x", content: "" }] }));
    const e = await loadError(dir);
    expect(e.code).toBe("invalid_clawgym_task");
    expect(e.message).toMatch(/oracle\.json: steps\.0\.path:/);
    await put(dir, "oracle.json", "{");
    expect((await loadError(dir)).message).toMatch(/oracle\.json: not valid JSON/);
  });

  it.each([
    ["invalid JSON", "{ not json", /data_entry\.json: not valid JSON/],
    ["an array", "[1]", /data_entry\.json: \(root\): /],
    ["no user_query", { task_id: "t" }, /data_entry\.json: user_query:/],
    ["a blank user_query", { task_id: "t", user_query: "  \n" }, /data_entry\.json: user_query: must not be empty/],
    ["a list as task_id", { task_id: [], user_query: "q" }, /data_entry\.json: task_id:/],
    ["a blank task_id", { task_id: " ", user_query: "q" }, /data_entry\.json: task_id:/],
    ["a fractional task_id", { task_id: 1.5, user_query: "q" }, /data_entry\.json: task_id:/],
    ["a numeric input_mount_dir", { task_id: "t", user_query: "q", input_mount_dir: 5 }, /data_entry\.json: input_mount_dir:/],
    ["a relative input_mount_dir", { task_id: "t", user_query: "q", input_mount_dir: "ws" }, /input_mount_dir: must be an absolute path other than \//],
    ["/ as input_mount_dir", { task_id: "t", user_query: "q", input_mount_dir: "//" }, /input_mount_dir: must be an absolute path other than \//],
    ["a list as metadata", { task_id: "t", user_query: "q", metadata: [] }, /data_entry\.json: metadata:/],
  ])("refuses data_entry.json with %s as invalid_clawgym_task, naming the file and field", async (_what, entry, message) => {
    const e = await loadError(await taskDir(entry));
    expect(e.code).toBe("invalid_clawgym_task");
    expect(e.message).toMatch(message);
  });

  it("refuses a folder without reward/reward.sh, or with reward.sh that is a folder", async () => {
    const noReward = await taskDir();
    await rm(join(noReward, "reward"), { recursive: true });
    expect((await loadError(noReward)).message).toMatch(/\/reward: missing/);
    const dirSh = await taskDir();
    await rm(join(dirSh, "reward", "reward.sh"));
    await mkdir(join(dirSh, "reward", "reward.sh"));
    expect((await loadError(dirSh)).message).toMatch(/reward\/reward\.sh: missing or not a regular file/);
  });

  it("refuses input_files that is a file, holds a symlink, or puts files under reward/ or .harnessrl/", async () => {
    const asFile = await taskDir();
    await rm(join(asFile, "input_files"), { recursive: true });
    await put(asFile, "input_files", "x");
    expect((await loadError(asFile)).message).toMatch(/input_files: must be a folder/);
    const link = await taskDir();
    await symlink("/etc/passwd", join(link, "input_files", "passwd"));
    const linkError = await loadError(link);
    expect(linkError.code).toBe("invalid_clawgym_task");
    expect(linkError.message).toMatch(/only regular files and folders/);
    for (const reserved of ["reward", ".harnessrl"]) {
      const dir = await taskDir();
      await put(dir, `input_files/${reserved}/x.txt`, "x");
      expect((await loadError(dir)).message).toMatch(new RegExp(`input_files/${reserved.replace(".", "\\.")}/x\\.txt: input files may not lie under`));
    }
  });

  it("refuses a symlink among the reward files", async () => {
    const dir = await taskDir();
    await symlink("/bin/true", join(dir, "reward", "tool"));
    await chmod(join(dir, "reward", "reward.sh"), 0o755);
    const e = await loadError(dir);
    expect(e.code).toBe("invalid_clawgym_task");
    expect(e.message).toMatch(/reward: .*only regular files/);
  });
});
