import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isHarnessRLError } from "../../src/core/errors.js";
import type { Store } from "../../src/store/types.js";
import { asStored, makeRecord, makeSession } from "./records.js";

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
      const codeOf = (f: () => void): unknown => {
        try {
          f();
        } catch (e) {
          return isHarnessRLError(e) ? e.code : e;
        }
        return "no error";
      };
      expect(codeOf(() => store.createSession(makeSession(), "hrl-same"))).toBe("store_duplicate");
      expect(codeOf(() => store.createSession({ ...makeSession(), sessionId: s1.sessionId }, "hrl-other"))).toBe("store_duplicate");
      expect(store.listSessions()).toHaveLength(1);
    });
  });
}
