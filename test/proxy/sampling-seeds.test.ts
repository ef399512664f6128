import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callSamplingSeed, childSamplingSeed, rolloutSamplingSeed } from "../../src/proxy/sampling-seeds.js";
import { startProxy, weatherAgent, type TestProxy } from "./helpers.js";

/**
 * Common random numbers: a session issued with a sampling seed samples its n-th call with a seed derived from it and
 * n (and its sub-agents from their ids), so two sessions of the same rollout key draw the same random numbers; a
 * session issued without one draws a random seed per call, as before.
 */
describe("proxy sessions issued with a sampling seed (common random numbers)", () => {
  let p: TestProxy;
  beforeAll(async () => {
    p = await startProxy(weatherAgent, { engine: { tokenDelayMs: 0 } });
  });
  afterAll(async () => p.close());

  const seedsOf = (sessionId: string): (number | undefined)[] => p.calls(sessionId).map((c) => c.samplingUsed?.seed);

  async function twoCalls(apiKey: string, headers: Record<string, string> = {}): Promise<void> {
    const client = p.openai(apiKey);
    const first = await client.chat.completions.create({ model: "policy", messages: [{ role: "user", content: "hello there" }] }, { headers });
    const reply = first.choices[0]?.message;
    await client.chat.completions.create({ model: "policy", messages: [{ role: "user", content: "hello there" }, { role: "assistant", content: reply?.content ?? "" }, { role: "user", content: "and tomorrow?" }] }, { headers });
  }

  it("seeds the n-th call of a session from the session's base seed, the same in two sessions with the same base", async () => {
    const base = rolloutSamplingSeed("eval-seed-0", "task-1", "chat-agent", 0);
    const a = p.server.issueSession({ rolloutId: "before-task-1", harness: "chat-agent", samplingSeed: base });
    const b = p.server.issueSession({ rolloutId: "after-task-1", harness: "chat-agent", samplingSeed: base });
    await twoCalls(a.apiKey);
    await twoCalls(b.apiKey);
    const want = [callSamplingSeed(base, 0), callSamplingSeed(base, 1)];
    expect(seedsOf(a.sessionId)).toEqual(want);
    expect(seedsOf(b.sessionId)).toEqual(want);
    expect(want[0]).not.toBe(want[1]);
    // Recorded with the session, so a record says which random numbers it drew.
    expect(p.store.getSession(a.sessionId)?.metadata).toMatchObject({ samplingSeed: base });
  });

  it("gives other rollouts of the plan other seeds, and sessions without a seed random ones", async () => {
    const keyed = [rolloutSamplingSeed("k", "task-1", "chat-agent", 0), rolloutSamplingSeed("k", "task-1", "chat-agent", 1), rolloutSamplingSeed("k", "task-1", "resp-agent", 0), rolloutSamplingSeed("k", "task-2", "chat-agent", 0), rolloutSamplingSeed("k2", "task-1", "chat-agent", 0)];
    expect(new Set(keyed).size).toBe(keyed.length);
    const plain = [p.session(), p.session()];
    for (const s of plain) await twoCalls(s.apiKey);
    const seeds = plain.flatMap((s) => seedsOf(s.sessionId));
    expect(seeds.every((s) => typeof s === "number")).toBe(true);
    expect(new Set(seeds).size).toBe(4);
  });

  it("seeds a sub-agent's calls from its parent's seed and its agent id, apart from the parent's own", async () => {
    const base = 12345;
    const parent = p.server.issueSession({ rolloutId: "r-sub", harness: "central-agent", samplingSeed: base });
    await twoCalls(parent.apiKey);
    const parentCall = p.calls(parent.sessionId)[0]!.callId;
    await twoCalls(parent.apiKey, { "x-harnessrl-parent-call": parentCall, "x-harnessrl-agent-id": "worker-1" });
    const child = `${parent.sessionId}~worker-1`;
    const childBase = childSamplingSeed(base, "worker-1");
    expect(seedsOf(child)).toEqual([callSamplingSeed(childBase, 0), callSamplingSeed(childBase, 1)]);
    expect(seedsOf(parent.sessionId)).toEqual([callSamplingSeed(base, 0), callSamplingSeed(base, 1)]);
  });
});
