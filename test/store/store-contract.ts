import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isHarnessRLError } from "../../src/core/errors.js";
import { isRolloutIngest } from "../../src/store/bundle.js";
import type { RolloutBundle, RolloutIngest, Store } from "../../src/store/types.js";
import { asStored, makeBundle, makeRecord, makeSession } from "./records.js";

/** The error code `f` throws ("no error" when it returns). */
function codeOf(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return isHarnessRLError(e) ? e.code : e;
  }
  return "no error";
}

/** The behaviour every Store adapter must have. Each adapter's test file calls this with a factory for a fresh store. */
export function storeContract(name: string, open: () => Store): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    beforeEach(() => {
      store = open();
    });
    afterEach(() => {
      store.close();
    });

    it("round-trips a call record exactly (tokens, float32 logprobs, JSON parts, nulls)", () => {
      const r = makeRecord({ break: { kind: "compaction", detail: "message 2 replaced", fromCallId: "call_x" }, parentCallId: "call_p", reusedPrefixTokens: 10 });
      store.insertCall(r);
      expect(store.getCall(r.callId)).toEqual(asStored(r));
      const errored = makeRecord({ status: "error", error: { code: "engine_down", message: "boom", fault: "engine" }, response: null, completionTokens: [], logprobs: [], finishReason: null, policyVersion: null, samplingUsed: null, rolloutId: null, rawResponse: null });
      store.insertCall(errored);
      expect(store.getCall(errored.callId)).toEqual(errored);
      const realigned = makeRecord({ realigned: [{ messageIndex: 3, kind: "reserialized_tool_args", fromCallId: "call_p" }] });
      store.insertCall(realigned);
      expect(store.getCall(realigned.callId)?.realigned).toEqual(realigned.realigned);
    });

    it("round-trips completion spans: parallel tool calls' token ranges and the malformed count; null stays null (schema-1 records)", () => {
      const spans = { toolCalls: [{ name: "bash", action: [[0, 3], [9, 11]] as [number, number][], args: [[3, 9]] as [number, number][] }, { name: "read", action: [[11, 14]] as [number, number][], args: [] }], malformed: 2 };
      const r = makeRecord({ spans });
      store.insertCall(r);
      expect(store.getCall(r.callId)?.spans).toEqual(spans);
      const old = makeRecord({ schemaVersion: 1, spans: null });
      store.insertCall(old);
      expect(store.getCall(old.callId)?.spans).toBeNull();
    });

    it("keeps the engine instance that sampled a call (ICR schema 5); a schema-4 record without one reads back without one", () => {
      const r = makeRecord({ engineInstance: "llamacpp@gpu-7/99/cafebabe" });
      store.insertCall(r);
      expect(store.getCall(r.callId)?.engineInstance).toBe("llamacpp@gpu-7/99/cafebabe");
      const { engineInstance: _, ...old } = makeRecord({ schemaVersion: 4 });
      store.insertCall(old);
      const back = store.getCall(old.callId);
      expect(back).not.toBeNull();
      expect(back && "engineInstance" in back).toBe(false);
    });

    it("returns null for unknown calls and sessions", () => {
      expect(store.getCall("call_nope")).toBeNull();
      expect(store.getSession("ses_nope")).toBeNull();
      expect(store.sessionByCredential("hrl-nope")).toBeNull();
    });

    it("keeps large prompts intact (8k tokens, ids up to 2^31-1)", () => {
      const r = makeRecord({}, 8192);
      r.promptTokens[100] = 2_147_483_647;
      r.promptTokens[101] = 151_643;
      store.insertCall(r);
      expect(store.getCall(r.callId)?.promptTokens).toEqual(r.promptTokens);
    });

    it("rejects a duplicate call id with a UserError and keeps the first record", () => {
      const r = makeRecord();
      store.insertCall(r);
      let err: unknown;
      try {
        store.insertCall({ ...r, completionTokens: [1] });
      } catch (e) {
        err = e;
      }
      expect(isHarnessRLError(err) && err.code).toBe("store_duplicate");
      expect(store.getCall(r.callId)?.completionTokens).toEqual(r.completionTokens);
    });

    it("does not alias stored records with the caller's objects", () => {
      const r = makeRecord();
      store.insertCall(r);
      r.promptTokens[0] = 999;
      r.messages[0]!.content = "mutated";
      const got = store.getCall(r.callId)!;
      expect(got.promptTokens[0]).not.toBe(999);
      expect(got.messages[0]!.content).toBe("You are a careful agent.");
      got.completionTokens.push(5);
      expect(store.getCall(r.callId)!.completionTokens).not.toContain(5);
    });

    it("lists calls in insertion order with filters, afterSeq and limit", () => {
      const a = makeRecord({ sessionId: "s1", rolloutId: "r1" });
      const b = makeRecord({ sessionId: "s2", rolloutId: "r1" });
      const c = makeRecord({ sessionId: "s1", rolloutId: "r2" });
      for (const r of [a, b, c]) store.insertCall(r);
      expect(store.listCalls().map((r) => r.callId)).toEqual([a.callId, b.callId, c.callId]);
      expect(store.listCalls({ sessionId: "s1" }).map((r) => r.callId)).toEqual([a.callId, c.callId]);
      expect(store.listCalls({ rolloutId: "r1" }).map((r) => r.callId)).toEqual([a.callId, b.callId]);
      expect(store.listCalls({ sessionId: "s1", rolloutId: "r2" }).map((r) => r.callId)).toEqual([c.callId]);
      expect(store.listCalls({ limit: 2 }).map((r) => r.callId)).toEqual([a.callId, b.callId]);
      const entries = store.listCallEntries();
      expect(entries.map((e) => e.record.callId)).toEqual([a.callId, b.callId, c.callId]);
      expect(entries[0]!.seq).toBeLessThan(entries[1]!.seq);
      expect(entries[1]!.seq).toBeLessThan(entries[2]!.seq);
      expect(store.listCallEntries({ afterSeq: entries[0]!.seq }).map((e) => e.record.callId)).toEqual([b.callId, c.callId]);
      expect(store.listCalls({ afterSeq: entries[2]!.seq })).toEqual([]);
      expect(store.countCalls()).toBe(3);
      expect(store.countCalls({ sessionId: "s1" })).toBe(2);
      expect(store.countCalls({ rolloutId: "r1" })).toBe(2);
      expect(store.countCalls({ sessionId: "nobody" })).toBe(0);
    });

    it("finds sessions by credential, never by another credential, and lists them by rollout", () => {
      const s1 = makeSession({ rolloutId: "r1", createdAt: 1 });
      const s2 = makeSession({ rolloutId: "r2", createdAt: 2, parentSessionId: s1.sessionId, spawnedByCallId: "call_1", metadata: {} });
      store.createSession(s1, "hrl-secret-1");
      store.createSession(s2, "hrl-secret-2");
      expect(store.sessionByCredential("hrl-secret-1")).toEqual(s1);
      expect(store.sessionByCredential("hrl-secret-2")).toEqual(s2);
      expect(store.sessionByCredential("hrl-secret-")).toBeNull();
      expect(store.getSession(s2.sessionId)).toEqual(s2);
      expect(store.listSessions().map((s) => s.sessionId)).toEqual([s1.sessionId, s2.sessionId]);
      expect(store.listSessions({ rolloutId: "r2" }).map((s) => s.sessionId)).toEqual([s2.sessionId]);
    });

    it("refuses a second session with the same credential or id", () => {
      const s1 = makeSession();
      store.createSession(s1, "hrl-same");
      expect(codeOf(() => store.createSession(makeSession(), "hrl-same"))).toBe("store_duplicate");
      expect(codeOf(() => store.createSession({ ...makeSession(), sessionId: s1.sessionId }, "hrl-other"))).toBe("store_duplicate");
      expect(store.listSessions()).toHaveLength(1);
    });

    describe("rollout ingest", () => {
      let ingest: Store & RolloutIngest;
      beforeEach(() => {
        expect(isRolloutIngest(store)).toBe(true);
        ingest = store as Store & RolloutIngest;
      });
      const rolloutState = (b: RolloutBundle) => ({ calls: ingest.listCalls({ rolloutId: b.rolloutId }), sessions: ingest.listSessions({ rolloutId: b.rolloutId }) });

      it("lands a bundle whole: its sessions, its calls in order and exact, its result with attempt and node", () => {
        const b = makeBundle(undefined, { attempt: 2, nodeId: "node-b" });
        expect(ingest.ingestRollout(b)).toEqual({ status: "inserted" });
        expect(ingest.listCalls({ rolloutId: b.rolloutId })).toEqual(b.calls.map(asStored));
        expect(ingest.getCall(b.calls[1]!.callId)).toEqual(asStored(b.calls[1]!));
        expect(ingest.listSessions({ rolloutId: b.rolloutId })).toEqual(b.sessions);
        const landed = ingest.listLandedRollouts();
        expect(landed).toEqual([{ rolloutId: b.rolloutId, attempt: 2, nodeId: "node-b", result: b.result, landedAt: expect.any(Number) as number }]);
        b.result.reward = -1;
        expect(ingest.listLandedRollouts()[0]!.result.reward).toBe(0.5);
      });

      it("keeps the first bundle of a rollout: a re-sent one and a later, different attempt are duplicates that change nothing", () => {
        const first = makeBundle();
        expect(ingest.ingestRollout(first)).toEqual({ status: "inserted" });
        const before = rolloutState(first);
        expect(ingest.ingestRollout(structuredClone(first))).toEqual({ status: "duplicate", landedAttempt: 1 });
        const retry = makeBundle(first.rolloutId, { attempt: 3, nodeId: "node-c", result: { reward: 1 } });
        expect(ingest.ingestRollout(retry)).toEqual({ status: "duplicate", landedAttempt: 1 });
        expect(rolloutState(first)).toEqual(before);
        expect(ingest.getCall(retry.calls[0]!.callId)).toBeNull();
        expect(ingest.getSession(retry.sessions[0]!.sessionId)).toBeNull();
        expect(ingest.listLandedRollouts().map((r) => [r.attempt, r.nodeId, r.result])).toEqual([[1, "node-a", first.result]]);
        expect(ingest.countCalls()).toBe(3);
      });

      it("never lets an ingested session authenticate, whatever credential is presented", () => {
        const b = makeBundle();
        ingest.ingestRollout(b);
        const s = b.sessions[0]!.sessionId;
        for (const credential of ["", s, `ingested:${s}`, "hrl-anything", "null"]) expect(ingest.sessionByCredential(credential)).toBeNull();
        // Sessions with credentials still work next to them.
        const own = makeSession({ rolloutId: b.rolloutId });
        ingest.createSession(own, "hrl-own");
        expect(ingest.sessionByCredential("hrl-own")?.sessionId).toBe(own.sessionId);
      });

      it("refuses malformed bundles and bundles reaching outside their rollout with invalid_rollout_bundle, landing nothing", () => {
        const bad: [string, (b: RolloutBundle) => unknown][] = [
          ["unknown version", (b) => ({ ...b, bundleVersion: 2 })],
          ["no node", (b) => ({ ...b, nodeId: "" })],
          ["attempt 0", (b) => ({ ...b, attempt: 0 })],
          ["a call of another rollout", (b) => ({ ...b, calls: [...b.calls, makeRecord({ rolloutId: "rol_other", sessionId: b.sessions[0]!.sessionId })] })],
          ["a session of another rollout", (b) => ({ ...b, sessions: [...b.sessions, makeSession({ rolloutId: "rol_other" })] })],
          ["a call of a session not in the bundle", (b) => ({ ...b, calls: [makeRecord({ rolloutId: b.rolloutId, sessionId: "ses_elsewhere" })] })],
          ["a parent call outside the bundle", (b) => ({ ...b, calls: [makeRecord({ rolloutId: b.rolloutId, sessionId: b.sessions[0]!.sessionId, parentCallId: "call_elsewhere" })] })],
          ["a token id that is not an int32", (b) => ({ ...b, calls: [{ ...b.calls[0]!, promptTokens: [1, 2.5] }] })],
          ["a token id beyond int32", (b) => ({ ...b, calls: [{ ...b.calls[0]!, completionTokens: [2 ** 31] }] })],
          ["a call without messages", (b) => ({ ...b, calls: [{ ...b.calls[0]!, messages: undefined }] })],
          ["the same call twice", (b) => ({ ...b, calls: [b.calls[0]!, b.calls[0]!] })],
          ["not an object", () => "bundle"],
        ];
        for (const [why, mutate] of bad) {
          const b = makeBundle();
          expect([why, codeOf(() => ingest.ingestRollout(mutate(b) as RolloutBundle))]).toEqual([why, "invalid_rollout_bundle"]);
        }
        expect(ingest.countCalls()).toBe(0);
        expect(ingest.listSessions()).toEqual([]);
        expect(ingest.listLandedRollouts()).toEqual([]);
      });

      it("rolls a bundle back whole when one of its calls clashes with a stored call, and lands it once corrected", () => {
        const stored = makeRecord({ rolloutId: "rol_proxy" });
        ingest.insertCall(stored);
        const b = makeBundle();
        const clashing = { ...b, calls: [b.calls[0]!, b.calls[1]!, { ...b.calls[2]!, callId: stored.callId }] };
        expect(codeOf(() => ingest.ingestRollout(clashing))).toBe("store_duplicate");
        expect(rolloutState(b)).toEqual({ calls: [], sessions: [] });
        expect(ingest.listLandedRollouts()).toEqual([]);
        expect(ingest.getCall(stored.callId)).toEqual(asStored(stored));
        // A rolled-back call is no base for later records: a call naming it as parent is stored whole and reads back.
        const orphan = makeRecord({ rolloutId: "rol_proxy", parentCallId: b.calls[0]!.callId, promptTokens: [...b.calls[0]!.promptTokens, ...b.calls[0]!.completionTokens, 1], reusedPrefixTokens: 71, messages: b.calls[1]!.messages });
        ingest.insertCall(orphan);
        expect(ingest.getCall(orphan.callId)).toEqual(asStored(orphan));
        expect(ingest.ingestRollout(b)).toEqual({ status: "inserted" });
        expect(ingest.listCalls({ rolloutId: b.rolloutId })).toEqual(b.calls.map(asStored));
      });

      it("lists landed rollouts as a cursor: landedAt strictly increases in landing order; afterLandedAt and limit page through", () => {
        const bundles = [makeBundle(), makeBundle(), makeBundle()];
        for (const b of bundles) ingest.ingestRollout(b);
        const all = ingest.listLandedRollouts();
        expect(all.map((r) => r.rolloutId)).toEqual(bundles.map((b) => b.rolloutId));
        expect(all[0]!.landedAt).toBeLessThan(all[1]!.landedAt);
        expect(all[1]!.landedAt).toBeLessThan(all[2]!.landedAt);
        expect(ingest.listLandedRollouts({ afterLandedAt: all[0]!.landedAt }).map((r) => r.rolloutId)).toEqual([bundles[1]!.rolloutId, bundles[2]!.rolloutId]);
        expect(ingest.listLandedRollouts({ afterLandedAt: all[0]!.landedAt, limit: 1 }).map((r) => r.rolloutId)).toEqual([bundles[1]!.rolloutId]);
        expect(ingest.listLandedRollouts({ afterLandedAt: all[2]!.landedAt })).toEqual([]);
        expect(ingest.listLandedRollouts({ limit: 0 })).toEqual([]);
      });
    });
  });
}
