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
 * Process rewards come only from the host's record of the tool calls: a policy that writes tool logs (where the
 * tools used to log, or where the verifier now reads them) or replaces the tool gets no process reward; a real call
 * through the workspace's ./calc (a stub forwarding to the host-side tool sandbox) does.
 */
describe("rewards and statuses a policy cannot forge", () => {
  let stack: RolloutStack;
  let arith: Task;
  let lookuprun: Task;

  beforeAll(async () => {
    stack = await openDoneStack(tempDir("hrl-host-tools-"), "bwrap");
    arith = (await loadSuite("arith:test?n=1&seed=5")).tasks[0]!;
    lookuprun = (await loadSuite("lookuprun:train?n=1&seed=2")).tasks[0]!;
  }, 120_000);

  afterAll(async () => {
    await stack?.close();
  });

  async function rollout(task: Task, id: string, command: string) {
    const harness = createCommandHarness({ name: `policy-${id}`, command });
    return runRollout({ rolloutId: id, taskId: task.id, harness: harness.name, sample: 0 }, task, harness, stack.backend, stack.rolloutProxy, DEFAULT_ROLLOUT_SETTINGS);
  }

  it("a policy that forges five calc log lines gets no process reward (outcome still scored)", async () => {
    const gold = arith.metadata.answer!;
    const line = JSON.stringify({ expr: arith.metadata["expression"], result: gold });
    const forge = [
      "mkdir -p .harnessrl/logs .harnessrl/verifier/logs",
      `for i in 1 2 3 4 5; do echo '${line}' >> .harnessrl/logs/calc.jsonl; echo '${line}' >> .harnessrl/verifier/logs/calc.jsonl; done`,
      `echo ${gold} > answer.txt`,
    ].join("; ");
    const r = await rollout(arith, "forged-log", forge);
    expect(r.status).toBe("ok");
    expect(r.verifier?.subscores).toEqual({ exact: 1, calc_used: 0, calc_calls: [] });
  }, 60_000);

  it("a policy that replaces ./calc with its own program gets no process reward", async () => {
    const gold = arith.metadata.answer!;
    const r = await rollout(arith, "fake-calc", `printf '#!/bin/sh\\necho ${gold}\\n' > calc; ./calc "x" > answer.txt`);
    expect(r.status).toBe("ok");
    expect(r.verifier?.subscores).toEqual({ exact: 1, calc_used: 0, calc_calls: [] });
  }, 60_000);

  it("real calls through the workspace's ./calc are recorded on the host and rewarded", async () => {
    const expr = arith.metadata["expression"] as string;
    const r = await rollout(arith, "honest", `grep -q 'tool service' calc && ./calc "1 + 1" && ./calc "${expr}" > answer.txt`);
    expect(r.status).toBe("ok");
    expect(r.verifier?.subscores).toEqual({ exact: 1, calc_used: 1, calc_calls: [0, 1] });
  }, 60_000);

  it("a policy that writes past the sandbox's disk budget ends as the harness's failure, not ours and not ok", async () => {
    const harness = createCommandHarness({ name: "policy-disk", command: `echo ${arith.metadata.answer!} > answer.txt; i=0; while [ $i -lt 200 ]; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); done; sleep 20` });
    const settings = { ...DEFAULT_ROLLOUT_SETTINGS, limits: { ...DEFAULT_ROLLOUT_SETTINGS.limits, diskBytes: 16 * 1024 * 1024 } };
    const started = Date.now();
    const r = await runRollout({ rolloutId: "disk-fill", taskId: arith.id, harness: harness.name, sample: 0 }, arith, harness, stack.backend, stack.rolloutProxy, settings);
    expect(r.status).toBe("harness_crash");
    expect(r.error).toMatch(/^sandbox_disk_limit: /);
    expect(r.stderr).toMatch(/over its disk budget of 16777216 bytes/);
    expect(r.verifier).toBeNull();
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 60_000);

  it("a tool reading an argument file (./search --chain) gets the file's content and each hop is recorded", async () => {
    const r = await rollout(lookuprun, "chain", lookuprun.metadata.oracle!.steps.map((s) => (s.kind === "run" ? s.command : "")).join("; "));
    expect(r.status).toBe("ok");
    const hits = r.verifier?.subscores["search_hits"] as number[];
    expect(hits.length).toBe(lookuprun.metadata["hops"]);
    expect(hits.every((h) => h === 1)).toBe(true);
  }, 60_000);
});
