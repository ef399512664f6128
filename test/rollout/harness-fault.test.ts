import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCommandHarness } from "../../src/harness/real/command.js";
import { DEFAULT_ROLLOUT_SETTINGS, runRollout } from "../../src/rollout/run-one.js";
import type { RolloutStack } from "../../src/rollout/stack.js";
import { openDoneStack } from "./done-engine-stack.js";
import { loadSuite } from "../../src/tasks/registry.js";
import type { Task } from "../../src/tasks/task.js";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();

/**
 * A harness that exits while a process it started detached (setsid) still waits on the proxy has broken its contract:
 * the rollout ends as the harness's failure (`harness_crash`, HarnessError `harness_unsettled`), not as ours.
 */
describe("a harness that leaves a call in flight after it exits", () => {
  let stack: RolloutStack;
  let task: Task;
  // The detached child asks the proxy once (it marks the start in the workspace first); the scripted engine takes ~0.4 s per token, so the call outlives the harness.
  const request = `require("fs").writeFileSync(".call-started", ""); fetch(process.env.OPENAI_BASE_URL + "/chat/completions", { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer " + process.env.OPENAI_API_KEY }, body: JSON.stringify({ model: process.env.OPENAI_MODEL, messages: [{ role: "user", content: "hi" }] }) }).then((r) => r.text())`;
  const harness = createCommandHarness({
    name: "leaves-a-call",
    // It exits once the child has started its request (a fixed sleep raced node's start-up on a loaded machine: the
    // harness exited before the call was made, and the rollout settled with 0 calls).
    command: `setsid ${process.execPath} -e '${request}' >/dev/null 2>&1 & for i in $(seq 1 400); do [ -f .call-started ] && break; sleep 0.05; done; sleep 0.3; exit 0`,
  });

  beforeAll(async () => {
    stack = await openDoneStack(tempDir("hrl-harness-fault-"), "local-unsafe", "delay=400");
    task = (await loadSuite("arith:test?n=1&seed=3")).tasks[0]!;
  }, 120_000);

  afterAll(async () => {
    await stack?.close();
  });

  it("is a harness_crash with harness_unsettled when settling times out", async () => {
    const settings = { ...DEFAULT_ROLLOUT_SETTINGS, settle: { stableMs: 100, pollMs: 20, timeoutMs: 300 } };
    const r = await runRollout({ rolloutId: "unsettled-1", taskId: task.id, harness: harness.name, sample: 0 }, task, harness, stack.backend, stack.rolloutProxy, settings);
    expect(r.exitCode).toBe(0);
    expect(r.status).toBe("harness_crash");
    expect(r.error).toMatch(/^harness_unsettled: /);
    expect(r.verifier).toBeNull();
  }, 60_000);

  it("is judged by its verifier when settling may wait for the call (same harness, longer settle budget)", async () => {
    const settings = { ...DEFAULT_ROLLOUT_SETTINGS, settle: { stableMs: 100, pollMs: 20, timeoutMs: 20_000 } };
    const r = await runRollout({ rolloutId: "settled-1", taskId: task.id, harness: harness.name, sample: 0 }, task, harness, stack.backend, stack.rolloutProxy, settings);
    expect(r.error).toBeNull();
    expect(r.calls).toBe(1);
    expect(r.status).toBe("task_failed");
  }, 60_000);
});
