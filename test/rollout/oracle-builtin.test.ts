import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RolloutStack } from "../../src/rollout/stack.js";
import { runRollouts } from "../../src/rollout/runner.js";
import type { BwrapBackend } from "../../src/sandbox/bwrap/backend.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import type { CallRecord } from "../../src/icr/records.js";
import { loadSuite } from "../../src/tasks/registry.js";

const HARNESSES = ["chat-agent", "claw-agent", "resp-agent", "central-agent"];

describe("oracle engine through every built-in harness in bwrap sandboxes", () => {
  let stack: RolloutStack;
  let results: RolloutResult[];
  let calls: CallRecord[];

  beforeAll(async () => {
    stack = await RolloutStack.open({ engine: "oracle", store: "memory", sandbox: "bwrap", sandboxPool: 6 });
    const tasks = [...(await loadSuite("mix:train?n=6&seed=11")).tasks, ...(await loadSuite("mix:test?n=3&seed=11")).tasks, ...(await loadSuite("calcfile:test?n=2&seed=11")).tasks, ...(await loadSuite("lookuprun:test?n=2&seed=11")).tasks];
    results = await runRollouts(stack, { tasks, harnesses: HARNESSES, samples: 1, idPrefix: "oracle" }, { concurrency: 6 });
    calls = stack.store.listCalls({});
  }, 300_000);

  afterAll(async () => {
    await stack?.close();
  });

  it("scores at least 0.99 on every family through every harness", () => {
    expect(results).toHaveLength(13 * HARNESSES.length);
    for (const harness of HARNESSES) {
      for (const family of ["arith", "calcfile", "files", "lookup", "lookuprun"]) {
        const group = results.filter((r) => r.harness === harness && r.family === family);
        expect(group.length).toBeGreaterThan(0);
        const mean = group.reduce((s, r) => s + r.score, 0) / group.length;
        expect(mean, `${harness}/${family}: ${group.map((r) => `${r.status} ${r.error ?? ""}`).join("; ")}`).toBeGreaterThanOrEqual(0.99);
      }
    }
    expect(results.every((r) => r.status === "ok")).toBe(true);
  });

  it("starts rollouts from a warm sandbox pool the size of the rollout concurrency", async () => {
    const backend = stack.backend as BwrapBackend;
    // How many rollouts of the run found a warm sandbox depends on how fast refills keep up on a loaded machine, so
    // the run only shows the pool was used; a settled pool must serve the next rollout of a harness it saw last.
    await backend.poolSettled();
    const settled = backend.poolStats();
    expect(settled.size).toBe(6);
    expect(settled.idle).toBe(6);
    const [task] = (await loadSuite("mix:test?n=1&seed=12")).tasks;
    if (!task) throw new Error("no task");
    const plan = { tasks: [task], harnesses: ["chat-agent"], samples: 1 };
    const first = await runRollouts(stack, { ...plan, idPrefix: "pool-a" }, { concurrency: 1 });
    await backend.poolSettled();
    const before = backend.poolStats();
    const second = await runRollouts(stack, { ...plan, idPrefix: "pool-b" }, { concurrency: 1 });
    const after = backend.poolStats();
    expect([...first, ...second].map((r) => r.status)).toEqual(["ok", "ok"]);
    // Every sandbox the second rollout needed (the agent's, and a tool sandbox if its task has one) was waiting warm.
    expect(after.hits).toBeGreaterThan(before.hits);
    expect(after.misses).toBe(before.misses);
  }, 120_000);

  it("records every model call of every rollout, attributed to the rollout", () => {
    for (const r of results) {
      const own = calls.filter((c) => c.rolloutId === r.rolloutId);
      expect(own.length).toBe(r.calls);
      expect(own.length).toBeGreaterThan(1);
      expect(own.every((c) => c.harness === r.harness)).toBe(true);
    }
  });

  it("central agent opens sub-agent conversations, some in parallel, linked to the central call", () => {
    const central = calls.filter((c) => c.harness === "central-agent");
    const parallel = central.filter((c) => c.agentRole === "central" && (c.response?.toolCalls?.length ?? 0) >= 2);
    expect(parallel.length).toBeGreaterThan(0);
    const subs = central.filter((c) => c.agentRole === "researcher" || c.agentRole === "worker");
    expect(subs.length).toBeGreaterThan(0);
    expect(subs.every((c) => c.spawnedByCallId !== null)).toBe(true);
    expect(new Set(subs.map((c) => c.agentId)).size).toBeGreaterThan(1);
    // Each sub-agent has a session of its own, a child of the central agent's session in the same rollout.
    for (const c of subs) {
      const own = stack.store.getSession(c.sessionId);
      const centralCall = central.find((k) => k.agentRole === "central" && k.rolloutId === c.rolloutId);
      expect(own?.parentSessionId).toBe(centralCall?.sessionId);
      expect(own?.rolloutId).toBe(c.rolloutId);
    }
    // Within its own session a sub-agent's second call extends its first token-exactly (no new-root break).
    const followUps = subs.filter((c) => c.parentCallId !== null);
    expect(followUps.length).toBeGreaterThan(0);
    expect(followUps.every((c) => c.break === null)).toBe(true);
  });

  it("the compacting harness really compacts: a compaction break in its records", () => {
    const claw = calls.filter((c) => c.harness === "claw-agent" && c.rolloutId?.includes("lookup"));
    expect(claw.some((c) => c.break?.kind === "compaction")).toBe(true);
  });

  it("history the harnesses left alone stays token-exact: later calls reuse their parent's tokens", () => {
    const extended = calls.filter((c) => c.parentCallId !== null && c.break === null);
    expect(extended.length).toBeGreaterThan(results.length);
    const byId = new Map(calls.map((c) => [c.callId, c]));
    for (const c of extended) {
      const parent = byId.get(c.parentCallId!)!;
      const prefix = [...parent.promptTokens, ...parent.completionTokens];
      expect(c.promptTokens.slice(0, prefix.length)).toEqual(prefix);
    }
  });
});
