import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { hashCredential } from "../../src/store/credentials.js";
import { LATEST_SCHEMA_VERSION } from "../../src/store/migrations.js";
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
    expect(() => openStore("postgres://x")).toThrow(/unknown store "postgres:\/\/x".*memory, sqlite/);
    expect(() => openStore("sqlite:")).toThrow(UserError);
    expect(() => openStore("")).toThrow(UserError);
    expect(() => openStore("memory:x")).toThrow(UserError);
  });
});
