import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { loadSuiteDir } from "../../src/tasks/load.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import { loadSuite } from "../../src/tasks/registry.js";
import { parseSuiteSpec } from "../../src/tasks/suite-spec.js";
import { VERIFIER_DIR } from "../../src/tasks/task.js";
import { attempt, oracleSteps } from "./helpers.js";

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "clawgym");

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "hrl-suites-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function put(root: string, rel: string, content: string): Promise<void> {
  await mkdir(dirname(join(root, rel)), { recursive: true });
  await writeFile(join(root, rel), content);
}

async function loadError(dir: string): Promise<string> {
  try {
    await loadSuiteDir(dir);
  } catch (e) {
    expect(e).toBeInstanceOf(UserError);
    return (e as Error).message;
  }
  throw new Error("expected the load to fail");
}

describe("native suite layout", () => {
  it("round-trips generated tasks through task.json/files/verifier, keeping executables, and they still verify", async () => {
    const tasks = (await loadSuite("mix:test?n=6&seed=4")).tasks;
    const dir = join(tmp, "native");
    await writeNativeSuite(tasks, dir);
    expect((await stat(join(dir, tasks[0]!.id, "files", "calc"))).mode & 0o111).not.toBe(0);
    const loaded = await loadSuiteDir(dir);
    const byId = new Map(tasks.map((t) => [t.id, t]));
    expect(loaded.map((t) => t.id).sort()).toEqual([...byId.keys()].sort());
    for (const t of loaded) expect(t).toEqual(byId.get(t.id));
    for (const t of loaded) expect((await attempt(t, oracleSteps(t))).result.score).toBe(1);
    expect((await loadSuite(`dir:${dir}:test`)).tasks).toHaveLength(6);
    expect((await loadSuite(`dir:${dir}:train`)).tasks).toHaveLength(0);
  });

  it("keeps binary workspace files byte-exact (as base64)", async () => {
    const dir = join(tmp, "binary");
    await put(dir, "t1/task.json", JSON.stringify({ id: "t1", family: "custom", split: "train", prompt: "p", verifier: { command: ["node", "v.cjs"] }, metadata: {} }));
    const bytes = Buffer.from([0, 255, 1, 128, 10]);
    await mkdir(join(dir, "t1", "files"), { recursive: true });
    await writeFile(join(dir, "t1", "files", "blob.bin"), bytes);
    const [t] = await loadSuiteDir(dir);
    expect(t!.files["blob.bin"]).toEqual({ content: bytes.toString("base64"), encoding: "base64", executable: false });
  });

  it.each([
    ["split", { split: "dev" }, /task\.json: split:/],
    ["prompt", { prompt: undefined }, /task\.json: prompt:/],
    ["verifier.command", { verifier: { command: [] } }, /task\.json: verifier\.command:/],
    ["id", { id: "has space" }, /task\.json: id:/],
    ["metadata.difficulty", { metadata: { difficulty: "hard" } }, /task\.json: metadata\.difficulty:/],
    ["unknown field", { extra: 1 }, /task\.json: .*extra/],
  ])("a bad %s is reported with the file and the field", async (_name, patch, message) => {
    const dir = join(tmp, `bad-${String(_name).replace(/\W/g, "_")}`);
    const base = { id: "t1", family: "custom", split: "train", prompt: "Do it.", verifier: { command: ["node", "v.cjs"] }, metadata: {} };
    await put(dir, "t1/task.json", JSON.stringify({ ...base, ...patch }));
    expect(await loadError(dir)).toMatch(message);
  });

  it("reports invalid JSON, unsafe paths and duplicate ids by file", async () => {
    const badJson = join(tmp, "bad-json");
    await put(badJson, "t1/task.json", "{ not json");
    expect(await loadError(badJson)).toMatch(/t1\/task\.json: not valid JSON/);

    const dup = join(tmp, "dup");
    const t = { id: "same", family: "custom", split: "train", prompt: "p", verifier: { command: ["true"] }, metadata: {} };
    await put(dup, "a/task.json", JSON.stringify(t));
    await put(dup, "b/task.json", JSON.stringify(t));
    expect(await loadError(dup)).toMatch(/task id "same" is used by 2 tasks/);

    const empty = join(tmp, "empty");
    await mkdir(join(empty, "nothing"), { recursive: true });
    expect(await loadError(empty)).toMatch(/no task folders/);
    expect(await loadError(join(tmp, "missing"))).toMatch(/not found/);
  });
});

describe("ClawGym-Bench layout", () => {
  it("loads the fixture suite unchanged: ids, prompts with the mount path rewritten, input files, reward files, splits", async () => {
    const tasks = await loadSuiteDir(FIXTURES);
    expect(tasks.map((t) => t.id)).toEqual(["task_0001", "task_0002"]);
    const [t1, t2] = tasks as [NonNullable<(typeof tasks)[0]>, NonNullable<(typeof tasks)[0]>];
    expect(t1.family).toBe("clawgym");
    expect(t1.split).toBe("test");
    expect(t2.split).toBe("train");
    expect(t1.prompt).toBe("Count the non-empty lines in /workspace/notes/todo.txt and write the count to /workspace/out/count.txt.");
    expect(t1.files["notes/todo.txt"]).toBe(await readFile(join(FIXTURES, "task_0001/input_files/notes/todo.txt"), "utf8"));
    expect(Object.keys(t1.verifier.files).sort()).toEqual(["clawgym_adapter.cjs", "clawgym_reward.json", "reward/check.py", "reward/reward.sh"]);
    expect(t1.verifier.command).toEqual(["node", `${VERIFIER_DIR}/clawgym_adapter.cjs`, "--mount", "/root/.openclaw/workspace"]);
    expect(t1.metadata["clawgym"]).toMatchObject({ task_id: "task_0001", metadata: { category: "file_ops", difficulty: "easy" } });
    expect((await loadSuiteDir(FIXTURES, { split: "train" })).map((t) => t.id)).toEqual(["task_0002"]);
    expect((await loadSuite(`dir:${FIXTURES}:test`)).tasks.map((t) => t.id)).toEqual(["task_0001"]);
  });

  it("runs reward.sh through the adapter: the gold solution scores 1 with check.py sub-scores, partial 0.5, nothing 0", async () => {
    const [t1] = await loadSuiteDir(FIXTURES);
    const gold = await attempt(t1!, [{ kind: "run", command: "mkdir -p out && echo 3 > out/count.txt" }]);
    expect(gold.result).toEqual({ score: 1, subscores: { file_exists: 1, count_correct: 1 } });
    const wrong = await attempt(t1!, [{ kind: "write", path: "out/count.txt", content: "4\n" }]);
    expect(wrong.result).toEqual({ score: 0.5, subscores: { file_exists: 1, count_correct: 0 } });
    const nothing = await attempt(t1!, []);
    expect(nothing.result).toEqual({ score: 0, subscores: { file_exists: 0, count_correct: 0 } });
  });

  it("converts a plain-number reward.sh without check.py", async () => {
    const [, t2] = await loadSuiteDir(FIXTURES);
    expect((await attempt(t2!, [{ kind: "write", path: "greeting.txt", content: "hello there\n" }])).result).toEqual({ score: 1, subscores: {} });
    expect((await attempt(t2!, [{ kind: "write", path: "greeting.txt", content: "bye\n" }])).result).toEqual({ score: 0, subscores: {} });
  });

  it("turns a broken reward.sh into score 0 with the reason, never a crash", async () => {
    const dir = join(tmp, "cg-broken");
    await put(dir, "task_1/data_entry.json", JSON.stringify({ task_id: 1, user_query: "q" }));
    await put(dir, "task_1/reward/reward.sh", "echo 'oops' >&2\nexit 3\n");
    await put(dir, "task_2/data_entry.json", JSON.stringify({ task_id: 2, user_query: "q" }));
    await put(dir, "task_2/reward/reward.sh", "echo 7\n");
    await chmod(join(dir, "task_2/reward/reward.sh"), 0o755);
    const [t1, t2] = await loadSuiteDir(dir);
    const broken = (await attempt(t1!, [])).result;
    expect(broken.score).toBe(0);
    expect(broken.error).toMatch(/printed nothing.*exit 3.*oops/);
    const outOfRange = (await attempt(t2!, [])).result;
    expect(outOfRange).toMatchObject({ score: 0, error: expect.stringMatching(/out of \[0, 1\]: 7/) });
  });

  it.each([
    ["user_query", { task_id: "t" }, /data_entry\.json: user_query:/],
    ["task_id", { user_query: "q", task_id: [] }, /data_entry\.json: task_id:/],
    ["input_mount_dir", { task_id: "t", user_query: "q", input_mount_dir: 5 }, /data_entry\.json: input_mount_dir:/],
  ])("a bad %s in data_entry.json is reported with the file and the field", async (name, entry, message) => {
    const dir = join(tmp, `cg-bad-${name}`);
    await put(dir, "task_0/data_entry.json", JSON.stringify(entry));
    await put(dir, "task_0/reward/reward.sh", "echo 1\n");
    expect(await loadError(dir)).toMatch(message);
  });

  it("requires reward/reward.sh", async () => {
    const dir = join(tmp, "cg-noreward");
    await put(dir, "task_0/data_entry.json", JSON.stringify({ task_id: "t", user_query: "q" }));
    expect(await loadError(dir)).toMatch(/task_0\/reward: missing/);
  });
});

describe("suite specs", () => {
  it("parses names, splits, options and dir paths", () => {
    expect(parseSuiteSpec("arith:test")).toEqual({ name: "arith", split: "test" });
    expect(parseSuiteSpec("lookup:train?n=200&seed=3")).toEqual({ name: "lookup", split: "train", n: 200, seed: 3 });
    expect(parseSuiteSpec("mix")).toEqual({ name: "mix" });
    expect(parseSuiteSpec("dir:/data/a:b/suite:test")).toEqual({ name: "dir", path: "/data/a:b/suite", split: "test" });
    expect(parseSuiteSpec("dir:relative/suite")).toEqual({ name: "dir", path: "relative/suite" });
  });

  it.each([
    ["arith:dev", /unknown split "dev"/],
    ["arith?n=0", /n:/],
    ["arith?n=abc", /n:/],
    ["arith?count=3", /count/],
    ["dir:", /needs a folder/],
    ["", /empty/],
  ])("rejects %j clearly", (spec, message) => {
    expect(() => parseSuiteSpec(spec)).toThrow(message);
  });

  it("names the known suites when one is unknown, and refuses generator options for folders", async () => {
    await expect(loadSuite("nope:test")).rejects.toThrow(/unknown task suite "nope".*arith.*files.*lookup.*mix/);
    await expect(loadSuite(`dir:${FIXTURES}?n=3`)).rejects.toThrow(/generated suites only/);
  });
});
