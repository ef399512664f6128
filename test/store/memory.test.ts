import { describe, expect, it } from "vitest";
import { collectRolloutBundle } from "../../src/store/bundle.js";
import { MemoryStore } from "../../src/store/memory.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import { asStored, makeBundle, makeRecord, makeSession } from "./records.js";
import { storeContract } from "./store-contract.js";

storeContract("MemoryStore", () => new MemoryStore());

describe("collectRolloutBundle", () => {
  it("reads a node's finished rollout from its local store into a bundle that lands whole elsewhere, credentials left behind", () => {
    const local = new SqliteStore(":memory:");
    const b = makeBundle();
    b.sessions.forEach((s, i) => local.createSession(s, `hrl-node-secret-${i}`));
    for (const c of b.calls) local.insertCall(c);
    // Another rollout on the same node stays out of the bundle.
    local.createSession(makeSession({ rolloutId: "rol_other" }), "hrl-other");
    local.insertCall(makeRecord({ rolloutId: "rol_other" }));
    const bundle = collectRolloutBundle(local, b.rolloutId, { attempt: 2, nodeId: "node-a", result: { reward: 1 } });
    expect(bundle).toEqual({ ...b, attempt: 2, calls: b.calls.map(asStored), result: { reward: 1 } });
    expect(JSON.stringify(bundle)).not.toContain("hrl-node-secret");
    const central = new MemoryStore();
    expect(central.ingestRollout(bundle)).toEqual({ status: "inserted" });
    expect(central.listCalls()).toEqual(b.calls.map(asStored));
    expect(central.sessionByCredential("hrl-node-secret-0")).toBeNull();
    local.close();
  });

  it("leaves out the sessions an earlier attempt of the same rollout left on the node", () => {
    const local = new SqliteStore(":memory:");
    const b = makeBundle();
    const stale = makeSession({ rolloutId: b.rolloutId, sessionId: "ses_attempt1" });
    local.createSession(stale, "hrl-attempt-1");
    local.insertCall(makeRecord({ rolloutId: b.rolloutId, sessionId: stale.sessionId, callId: "call_attempt1" }));
    const earlier = new Set(local.listSessions({ rolloutId: b.rolloutId }).map((s) => s.sessionId));
    b.sessions.forEach((s, i) => local.createSession(s, `hrl-attempt-2-${i}`));
    for (const c of b.calls) local.insertCall(c);
    const all = collectRolloutBundle(local, b.rolloutId, { attempt: 2, nodeId: "node-a", result: {} });
    expect(all.sessions.map((s) => s.sessionId)).toContain("ses_attempt1");
    const bundle = collectRolloutBundle(local, b.rolloutId, { attempt: 2, nodeId: "node-a", result: {}, earlier });
    expect(bundle.sessions).toEqual(b.sessions);
    expect(bundle.calls).toEqual(b.calls.map(asStored));
    local.close();
  });
});
