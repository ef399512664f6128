import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import type { ChatMessage } from "../../src/chat/types.js";
import type { CallRecord } from "../../src/icr/records.js";
import { UserError } from "../../src/core/errors.js";
import { Checkpointer } from "../../src/store/checkpointer.js";
import { hashCredential } from "../../src/store/credentials.js";
import { LATEST_SCHEMA_VERSION, MIGRATIONS, migrate } from "../../src/store/migrations.js";
import { MemoryStore } from "../../src/store/memory.js";
import { openStore } from "../../src/store/registry.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import { asStored, makeRecord, makeSession } from "./records.js";
import { storeContract } from "./store-contract.js";

const dir = mkdtempSync(join(tmpdir(), "hrl-sqlite-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const freshPath = (): string => join(dir, `store-${n++}.sqlite`);

storeContract("SqliteStore", () => new SqliteStore(freshPath()));

describe("SqliteStore specifics", () => {
  it("persists across close and reopen, in WAL mode with synchronous=NORMAL", () => {
    const path = freshPath();
    const s = new SqliteStore(path);
    const r = makeRecord({}, 4096);
    s.insertCall(r);
    s.createSession(makeSession({ sessionId: "ses_a" }), "hrl-a");
    s.close();
    const again = new SqliteStore(path);
    expect(again.getCall(r.callId)).toEqual(asStored(r));
    expect(again.sessionByCredential("hrl-a")?.sessionId).toBe("ses_a");
    again.close();
    const db = new Database(path, { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    db.close();
  });

  it("stores the credential only as a sha-256 hash", () => {
    const path = freshPath();
    const s = new SqliteStore(path);
    const secret = "hrl-VERY-secret-credential-value";
    s.createSession(makeSession({ sessionId: "ses_h" }), secret);
    s.close();
    const db = new Database(path, { readonly: true });
    expect(db.prepare("SELECT credential_hash FROM sessions").pluck().get()).toBe(hashCredential(secret));
    db.close();
    for (const f of [path, `${path}-wal`]) {
      if (!existsSync(f)) continue;
      expect(readFileSync(f).toString("latin1").includes(secret)).toBe(false);
    }
  });

  it("records applied migrations once and reopens without reapplying", () => {
    const path = freshPath();
    new SqliteStore(path).close();
    new SqliteStore(path).close();
    const db = new Database(path, { readonly: true });
    const versions = db.prepare("SELECT version FROM schema_migrations ORDER BY version").pluck().all();
    db.close();
    expect(versions).toEqual(Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1));
  });

  it("refuses a database written by a newer schema with a clear UserError", () => {
    const path = freshPath();
    new SqliteStore(path).close();
    const db = new Database(path);
    db.prepare("INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, 'from the future', 0)").run(LATEST_SCHEMA_VERSION + 1);
    db.close();
    let err: unknown;
    try {
      new SqliteStore(path);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).code).toBe("store_schema_too_new");
    expect((err as UserError).message).toContain(`schema version ${LATEST_SCHEMA_VERSION + 1}`);
  });

  it("opens an existing store read-only, and refuses files that are not harnessrl stores", () => {
    const path = freshPath();
    const w = new SqliteStore(path);
    const r = makeRecord();
    w.insertCall(r);
    const ro = new SqliteStore(path, { readonly: true });
    expect(ro.getCall(r.callId)?.callId).toBe(r.callId);
    expect(() => ro.insertCall(makeRecord())).toThrow();
    ro.close();
    w.close();
    const other = freshPath();
    const db = new Database(other);
    db.exec("CREATE TABLE t (x)");
    db.close();
    expect(() => new SqliteStore(other, { readonly: true })).toThrow(/not a harnessrl call record store/);
    expect(() => new SqliteStore(join(dir, "missing.sqlite"), { readonly: true })).toThrow(UserError);
  });

  it("reports an unopenable path as a UserError", () => {
    const blocker = freshPath();
    new SqliteStore(blocker).close();
    expect(() => new SqliteStore(join(blocker, "nested.sqlite"))).toThrow(UserError);
  });

  it("refuses token ids that are not 32-bit integers instead of storing something else", () => {
    const s = new SqliteStore(freshPath());
    for (const bad of [1.5, 2 ** 31, -(2 ** 31) - 1, Number.NaN]) {
      expect(() => s.insertCall(makeRecord({ promptTokens: [1, 2, bad] }))).toThrow(/not a 32-bit integer/);
    }
    s.insertCall(makeRecord({ promptTokens: [2 ** 31 - 1, -(2 ** 31), 0] }));
    expect(s.countCalls()).toBe(1);
    s.close();
  });

  it("sees rows another connection committed (readers in other processes)", () => {
    const path = freshPath();
    const writer = new SqliteStore(path);
    const reader = new SqliteStore(path);
    const r = makeRecord();
    writer.insertCall(r);
    expect(reader.getCall(r.callId)?.callId).toBe(r.callId);
    writer.close();
    reader.close();
  });
});

describe("SqliteStore WAL checkpoints off the writer's thread", () => {
  it("copies committed calls into the database file from the checkpoint worker while the writer's own autocheckpoint is far off", async () => {
    const path = freshPath();
    const store = new SqliteStore(path);
    try {
      store.createSession(makeSession(), "cred-ckpt");
      const before = statSync(path).size;
      // ~1 MB of records: below the writer's autocheckpoint (16,384 pages), far above what the file holds before.
      for (let i = 0; i < 40; i++) store.insertCall(makeRecord({ callId: `call_ckpt_${i}` }, 6000));
      // SQLite alone (1,000 pages) would not have checkpointed these yet either: only the worker can have.
      const writer = (store as unknown as { db: Database.Database }).db;
      expect(writer.pragma("wal_autocheckpoint", { simple: true })).toBe(16_384);
      let size = statSync(path).size;
      for (let waited = 0; size < before + 500_000 && waited < 10_000; waited += 50) {
        await new Promise((r) => setTimeout(r, 50));
        size = statSync(path).size;
      }
      expect(size).toBeGreaterThan(before + 500_000);
      expect(store.countCalls()).toBe(40);
    } finally {
      store.close();
    }
  });

  it("reports a worker that cannot open the store, so the writer goes back to checkpointing itself", async () => {
    const failed = await new Promise<boolean>((resolve) => {
      const c = Checkpointer.start(join(dir, "missing", "none.sqlite"), () => resolve(true));
      if (c === null) resolve(false);
    });
    expect(failed).toBe(true);
  });
});

describe("SqliteStore prompt deltas", () => {
  /** A session of `turns` calls whose prompts extend the previous prompt + completion, as the proxy records them. */
  function session(turns: number, sessionId = "ses_delta"): ReturnType<typeof makeRecord>[] {
    const out: ReturnType<typeof makeRecord>[] = [];
    let prompt = Array.from({ length: 3000 }, (_, i) => (i * 31) % 250);
    for (let t = 0; t < turns; t++) {
      const prev = out[out.length - 1];
      const r = makeRecord({ sessionId, promptTokens: prompt, parentCallId: prev?.callId ?? null, reusedPrefixTokens: prev ? prev.promptTokens.length + prev.completionTokens.length : 0 });
      out.push(r);
      prompt = [...prompt, ...r.completionTokens, ...Array.from({ length: 40 + t }, (_, i) => (i * 13 + t) % 250)];
    }
    return out;
  }
  const storedPromptBytes = (path: string): number[] => {
    const db = new Database(path, { readonly: true });
    const rows = db.prepare("SELECT length(prompt_tokens) AS n FROM calls ORDER BY seq").all() as { n: number }[];
    db.close();
    return rows.map((r) => r.n);
  };

  it("stores each turn's new prompt tokens only, and every read path returns whole prompts", () => {
    const path = freshPath();
    const s = new SqliteStore(path);
    const calls = session(12);
    for (const c of calls) s.insertCall(c);
    const bytes = storedPromptBytes(path);
    expect(bytes[0]).toBe(3000 * 4);
    // Turn t stores its tool output (40 + t − 1 tokens) only, not the ~3k-token history.
    for (let t = 1; t < calls.length; t++) expect(bytes[t]).toBe((40 + t - 1) * 4);
    const want = calls.map(asStored);
    expect(s.listCalls({ sessionId: "ses_delta" })).toEqual(want);
    expect(s.getCall(calls[7]!.callId)).toEqual(want[7]);
    s.close();
    // A new instance knows no recent calls: reads resolve the chain from the rows, in any order and subset.
    const again = new SqliteStore(path);
    expect(again.getCall(calls[11]!.callId)).toEqual(want[11]);
    const entries = again.listCallEntries({ sessionId: "ses_delta" });
    expect(again.listCallEntries({ afterSeq: entries[8]!.seq }).map((e) => e.record)).toEqual(want.slice(9));
    expect(again.listCalls({ limit: 3 })).toEqual(want.slice(0, 3));
    again.close();
  });

  it("stores a prompt whole when the claimed reuse does not match the parent's tokens or the parent is unknown", () => {
    const path = freshPath();
    const s = new SqliteStore(path);
    const [a, b] = session(2);
    s.insertCall(a!);
    const lying = { ...b!, promptTokens: [...b!.promptTokens], callId: "call_lying" };
    lying.promptTokens[5] = 999; // differs inside the claimed prefix
    s.insertCall(lying);
    const orphan = { ...b!, callId: "call_orphan", parentCallId: "call_not_in_this_store" };
    s.insertCall(orphan);
    const bytes = storedPromptBytes(path);
    expect(bytes[1]).toBe(lying.promptTokens.length * 4);
    expect(bytes[2]).toBe(orphan.promptTokens.length * 4);
    expect(s.getCall("call_lying")).toEqual(asStored(lying));
    expect(s.getCall("call_orphan")).toEqual(asStored(orphan));
    s.close();
  });

  it("migrates a version-1 store in place: old rows read back unchanged, new rows are deltas", () => {
    const path = freshPath();
    const calls = session(3, "ses_old");
    // What a schema-1 proxy wrote: no completion spans.
    calls[0] = { ...calls[0]!, schemaVersion: 1, spans: null };
    // A version-1 database (only the first migration) holding the first call as a v1 row (whole prompt).
    const src = freshPath();
    const writer = new SqliteStore(src);
    writer.insertCall(calls[0]!);
    writer.close();
    const v1 = new Database(path);
    migrate(v1, path, MIGRATIONS.filter((m) => m.version === 1));
    const cols = (v1.prepare("SELECT name FROM pragma_table_info('calls') WHERE name != 'seq'").pluck().all() as string[]).join(", ");
    v1.exec(`ATTACH '${src}' AS src; INSERT INTO calls (${cols}) SELECT ${cols} FROM src.calls; DETACH src;`);
    v1.close();
    const s = new SqliteStore(path);
    expect(s.getCall(calls[0]!.callId)).toEqual(asStored(calls[0]!));
    s.insertCall(calls[1]!); // its parent was written by another instance: stored whole
    s.insertCall(calls[2]!); // a delta against calls[1]
    expect(storedPromptBytes(path).slice(1)).toEqual([calls[1]!.promptTokens.length * 4, 41 * 4]);
    expect(s.listCalls({ sessionId: "ses_old" })).toEqual(calls.map(asStored));
    s.close();
  });
});

describe("SqliteStore text deltas", () => {
  const TOOLS = [{ name: "bash", description: "run a command ".repeat(50), parameters: { type: "object", properties: { command: { type: "string" } } } }];
  /** A harness session: every request repeats the conversation so far, then the same tools and parameters. */
  function grownSession(turns: number, sessionId: string): ReturnType<typeof makeRecord>[] {
    const out: ReturnType<typeof makeRecord>[] = [];
    const messages: ChatMessage[] = [{ role: "system", content: "You are careful. ".repeat(80) }];
    for (let t = 0; t < turns; t++) {
      messages.push({ role: "user", content: `step ${t}: output ${"ünï😀 ".repeat(30 + t)}` });
      const prev = out[out.length - 1];
      const rawRequest = { model: "policy", messages: messages.map((m) => ({ role: m.role, content: m.content })), tools: TOOLS, stream: true, max_tokens: 256 };
      const r = makeRecord({ sessionId, messages: [...messages], rawRequest, parentCallId: prev?.callId ?? null }, 50);
      out.push(r);
      messages.push({ role: "assistant", content: `answer ${t} 😁` });
    }
    return out;
  }
  const storedTexts = (path: string): { m: number; r: number | null; t: number; base: string | null }[] => {
    const db = new Database(path, { readonly: true });
    const rows = db.prepare("SELECT length(messages_json) AS m, length(raw_request_json) AS r, length(tools_json) AS t, text_base_call_id AS base FROM calls ORDER BY seq").all() as { m: number; r: number | null; t: number; base: string | null }[];
    db.close();
    return rows;
  };

  it("stores each turn's new messages, raw request text and tool changes only, and every read path returns them whole", () => {
    const path = freshPath();
    const s = new SqliteStore(path);
    const calls = grownSession(10, "ses_text");
    for (const c of calls) s.insertCall(c);
    const rows = storedTexts(path);
    expect(rows[0]!.base).toBeNull();
    expect(rows[0]!.m).toBe([...JSON.stringify(calls[0]!.messages)].length); // SQLite counts code points
    for (let t = 1; t < calls.length; t++) {
      expect(rows[t]!.base).toBe(calls[t - 1]!.callId);
      // The new assistant + user turns (~200–300 characters), not the history (grows past 10k) nor the tools.
      expect(rows[t]!.m).toBeLessThan(400);
      expect(rows[t]!.r).toBeLessThan(400);
      expect(rows[t]!.t).toBe(0); // the same tools as the parent's: nothing stored
    }
    expect(rows[0]!.t).toBe(JSON.stringify(calls[0]!.tools).length);
    expect(JSON.stringify(calls[9]!.rawRequest).length).toBeGreaterThan(5000);
    const want = calls.map(asStored);
    expect(s.listCalls({ sessionId: "ses_text" })).toEqual(want);
    s.close();
    const again = new SqliteStore(path);
    expect(again.getCall(calls[9]!.callId)).toEqual(want[9]);
    const entries = again.listCallEntries({ sessionId: "ses_text" });
    expect(again.listCallEntries({ afterSeq: entries[6]!.seq }).map((e) => e.record)).toEqual(want.slice(7));
    again.close();
  });

  it("reports a delta whose base row is gone as a corrupt store (InfraError store_corrupt), not a wrong record", () => {
    const path = freshPath();
    const s = new SqliteStore(path);
    const [a, b] = grownSession(2, "ses_text3");
    s.insertCall(a!);
    s.insertCall(b!);
    s.close();
    const db = new Database(path);
    db.prepare("DELETE FROM calls WHERE call_id = ?").run(a!.callId);
    db.close();
    const again = new SqliteStore(path);
    expect(() => again.getCall(b!.callId)).toThrow(expect.objectContaining({ code: "store_corrupt", fault: "infra" }));
    again.close();
  });

  it("keeps a text whole when the parent is unknown, has no raw request, or shares nothing", () => {
    const path = freshPath();
    const s = new SqliteStore(path);
    const [a, b, c] = grownSession(3, "ses_text2");
    const noRaw: CallRecord = { ...a!, rawRequest: undefined };
    s.insertCall(noRaw);
    const unrelated: CallRecord = { ...b!, messages: [{ role: "user", content: "unrelated" }] };
    s.insertCall(unrelated);
    const orphan: CallRecord = { ...c!, parentCallId: "call_elsewhere" };
    s.insertCall(orphan);
    const rows = storedTexts(path);
    expect(rows[0]!.r).toBeNull();
    // Messages share nothing and the parent has no raw request: both whole; only the (same) tools are a delta.
    expect(rows[1]!.m).toBe([...JSON.stringify(unrelated.messages)].length);
    expect(rows[1]!.r).toBe([...JSON.stringify(unrelated.rawRequest)].length);
    expect(rows[1]!.t).toBe(0);
    expect(rows[2]!.base).toBeNull();
    expect(rows[2]!.t).toBe(JSON.stringify(orphan.tools).length);
    expect(s.listCalls({ sessionId: "ses_text2" })).toEqual([noRaw, unrelated, orphan].map(asStored));
    s.close();
  });

  it("migrates a version-2 store: rows, seq values and prompt deltas survive the table rebuild; new rows are text deltas", () => {
    const path = freshPath();
    const calls = grownSession(4, "ses_v2").map((c, i) => (i < 2 ? { ...c, schemaVersion: 1, spans: null } : c));
    const src = freshPath();
    const writer = new SqliteStore(src);
    for (const c of calls.slice(0, 2)) writer.insertCall({ ...c, promptTokens: c.promptTokens });
    writer.close();
    const v2 = new Database(path);
    migrate(v2, path, MIGRATIONS.filter((m) => m.version <= 2));
    const cols = (v2.prepare("SELECT name FROM pragma_table_info('calls')").pluck().all() as string[]).join(", ");
    // v2 rows hold whole texts: copy them from the v3 store with its texts resolved.
    v2.exec(`ATTACH '${src}' AS src; INSERT INTO calls (${cols}) SELECT ${cols} FROM src.calls; DETACH src;`);
    const whole = v2.prepare("UPDATE calls SET messages_json = ?, raw_request_json = ?, tools_json = ?, seq = seq + 40 WHERE call_id = ?");
    for (const c of calls.slice(0, 2)) whole.run(JSON.stringify(c.messages), JSON.stringify(c.rawRequest), JSON.stringify(c.tools), c.callId);
    v2.close();
    const s = new SqliteStore(path);
    expect(s.listCalls({ sessionId: "ses_v2" })).toEqual(calls.slice(0, 2).map(asStored));
    s.insertCall(calls[2]!);
    s.insertCall(calls[3]!);
    const entries = s.listCallEntries({ sessionId: "ses_v2" });
    expect(entries.map((e) => e.seq)).toEqual([41, 42, 43, 44]);
    expect(entries.map((e) => e.record)).toEqual(calls.map(asStored));
    expect(storedTexts(path)[3]!.base).toBe(calls[2]!.callId);
    const db = new Database(path, { readonly: true });
    const sql = db.prepare("SELECT sql FROM sqlite_master WHERE name = 'calls'").pluck().get() as string;
    const indexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls' AND sql IS NOT NULL ORDER BY name").pluck().all();
    db.close();
    expect(sql).not.toMatch(/AUTOINCREMENT/);
    expect(indexes).toEqual(["calls_by_rollout", "calls_by_session"]);
    s.close();
  });

  it("migrates a version-3 store: old rows read back with spans null (unknown, not empty); new rows keep their spans", () => {
    const path = freshPath();
    const old = makeRecord({ schemaVersion: 1 });
    const src = freshPath();
    const writer = new SqliteStore(src);
    writer.insertCall(old);
    writer.close();
    const v3 = new Database(path);
    migrate(v3, path, MIGRATIONS.filter((m) => m.version <= 3));
    // The columns a version-3 store has (no spans_json): the row arrives as a schema-3 writer left it.
    const cols = (v3.prepare("SELECT name FROM pragma_table_info('calls')").pluck().all() as string[]).join(", ");
    expect(cols).not.toContain("spans_json");
    v3.exec(`ATTACH '${src}' AS src; INSERT INTO calls (${cols}) SELECT ${cols} FROM src.calls; DETACH src;`);
    v3.close();
    const s = new SqliteStore(path);
    expect(s.getCall(old.callId)).toEqual(asStored({ ...old, spans: null }));
    const fresh = makeRecord({ parentCallId: old.callId });
    s.insertCall(fresh);
    expect(s.getCall(fresh.callId)).toEqual(asStored(fresh));
    expect(s.getCall(fresh.callId)?.spans?.toolCalls[0]?.args).toEqual([[4, 5]]);
    s.close();
  });
});

describe("openStore", () => {
  it("opens adapters by spec", () => {
    const a = openStore("memory");
    expect(a).toBeInstanceOf(MemoryStore);
    a.close();
    const b = openStore(`sqlite:${freshPath()}`);
    expect(b.kind).toBe("sqlite");
    b.close();
    const c = openStore(join(dir, "bare.sqlite"));
    expect(c.kind).toBe("sqlite");
    c.close();
    const d = openStore(join(dir, "bare.db"));
    expect(d.kind).toBe("sqlite");
    d.close();
  });

  it("rejects unknown or malformed specs with UserErrors naming the options", () => {
    expect(() => openStore("mysql://x")).toThrow(/unknown store "mysql:\/\/x".*memory, postgres, postgresql, sqlite/);
    expect(() => openStore("sqlite:")).toThrow(UserError);
    expect(() => openStore("")).toThrow(UserError);
    expect(() => openStore("memory:x")).toThrow(UserError);
  });
});
