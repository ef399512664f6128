import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../setup/cli.js";

/**
 * A bind mount's source path shows in the sandbox's /proc/self/mountinfo. The bound workspace, HOME, bridge and agent
 * code come from a neutral per-sandbox directory, so a policy reading it learns nothing of the host's run layout.
 */
describe("what a rollout's sandbox sees of the host in /proc/self/mountinfo", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-mountinfo-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("names neither the run directory, the sandbox state root and state directory, nor the project's path", async () => {
    chmodSync(root, 0o711);
    const runDir = join(root, "run");
    const sandboxRoot = join(runDir, "sandboxes");
    const args = ["dist/cli/main.js", "rollout", "--engine", "oracle", "--tasks", "arith:test?n=1&seed=3", "--harness", "command", "--out", runDir];
    const env = { ...process.env, HARNESSRL_SANDBOX_ROOT: sandboxRoot, HARNESSRL_HARNESS_COMMAND: "cat /proc/self/mountinfo" };
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: "ignore" });
      child.on("error", reject);
      child.on("close", resolve);
    });
    const [result] = readFileSync(join(runDir, "rollouts.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { stdout: string; harness: string });
    const mountinfo = result?.stdout ?? "";
    expect(code, mountinfo).toBe(0);
    // It is the sandbox's mount table: the workspace and the agent are bind mounts in it.
    expect(mountinfo).toMatch(/ \/workspace rw,/);
    expect(mountinfo).toMatch(/ \/run\/harnessrl\/agent ro,/);
    for (const hostPath of [root, runDir, sandboxRoot, REPO_ROOT, "sbx_"]) expect(mountinfo, hostPath).not.toContain(hostPath);
    if (homedir() !== "/") expect(mountinfo).not.toContain(`${homedir()}/`);
  }, 120_000);
});
