import { UserError } from "../core/errors.js";
import { nextLandedAt, parseRolloutBundle } from "./bundle.js";
import { hashCredential } from "./credentials.js";
import type { CallRecord, SessionInfo } from "../icr/records.js";
import type { CallQuery, IngestOutcome, LandedRollout, RolloutBundle, RolloutIngest, Store, StoredCall } from "./types.js";

/**
 * In-process store for tests and throwaway runs. It follows the SQLite store's contract exactly, including copying
 * records in and out (no aliasing) and keeping logprobs at float32 precision as the SQLite BLOBs do.
 */
export class MemoryStore implements Store, RolloutIngest {
  readonly kind = "memory";
  private readonly sessions = new Map<string, SessionInfo>();
  private readonly credentialHashes = new Map<string, string>();
  private readonly calls: StoredCall[] = [];
  private readonly callIndex = new Map<string, StoredCall>();
  /** Per-session and per-rollout lists (insertion order), so a filtered read does not scan every call of the run. */
  private readonly callsBySession = new Map<string, StoredCall[]>();
  private readonly callsByRollout = new Map<string, StoredCall[]>();
  private readonly sessionsByRollout = new Map<string | null, SessionInfo[]>();
  private readonly landed = new Map<string, LandedRollout>();
  private lastLandedAt: number | null = null;
  private nextSeq = 1;
  private closed = false;

  createSession(session: SessionInfo, credential: string): void {
    this.assertOpen();
    const hash = hashCredential(credential);
    if (this.sessions.has(session.sessionId) || this.credentialHashes.has(hash)) {
      throw new UserError("store_duplicate", `session ${session.sessionId} conflicts with an existing session or credential`);
    }
    this.addSession(session);
    this.credentialHashes.set(hash, session.sessionId);
  }

  /** A session without a credential: nothing can authenticate as it. */
  private addSession(session: SessionInfo): void {
    const copy = structuredClone({ ...session, metadata: session.metadata ?? {} });
    this.sessions.set(session.sessionId, copy);
    push(this.sessionsByRollout, copy.rolloutId, copy);
  }

  sessionByCredential(credential: string): SessionInfo | null {
    const id = this.credentialHashes.get(hashCredential(credential));
    return id === undefined ? null : this.getSession(id);
  }

  getSession(sessionId: string): SessionInfo | null {
    const s = this.sessions.get(sessionId);
    return s ? structuredClone(s) : null;
  }

  listSessions(filter: { rolloutId?: string } = {}): SessionInfo[] {
    return [...(filter.rolloutId === undefined ? this.sessions.values() : (this.sessionsByRollout.get(filter.rolloutId) ?? []))]
      .sort((a, b) => a.createdAt - b.createdAt || (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : 0))
      .map((s) => structuredClone(s));
  }

  insertCall(record: CallRecord): void {
    this.assertOpen();
    if (this.callIndex.has(record.callId)) throw new UserError("store_duplicate", `call ${record.callId} conflicts with an existing row`);
    const copy = structuredClone(record);
    copy.logprobs = copy.logprobs.map((x) => Math.fround(x));
    const entry = { seq: this.nextSeq++, record: copy };
    this.calls.push(entry);
    this.callIndex.set(record.callId, entry);
    push(this.callsBySession, copy.sessionId, entry);
    if (copy.rolloutId !== null) push(this.callsByRollout, copy.rolloutId, entry);
  }

  getCall(callId: string): CallRecord | null {
    const e = this.callIndex.get(callId);
    return e ? structuredClone(e.record) : null;
  }

  listCalls(query: CallQuery = {}): CallRecord[] {
    return this.select(query).map((e) => structuredClone(e.record));
  }

  listCallEntries(query: CallQuery = {}): StoredCall[] {
    return this.select(query).map((e) => ({ seq: e.seq, record: structuredClone(e.record) }));
  }

  countCalls(query: { sessionId?: string; rolloutId?: string } = {}): number {
    return this.select(query).length;
  }

  ingestRollout(input: RolloutBundle): IngestOutcome {
    this.assertOpen();
    const bundle = parseRolloutBundle(input);
    const first = this.landed.get(bundle.rolloutId);
    if (first) return { status: "duplicate", landedAttempt: first.attempt };
    // All checks before any change: the bundle lands whole or not at all.
    const clash = bundle.sessions.find((s) => this.sessions.has(s.sessionId))?.sessionId ?? bundle.calls.find((c) => this.callIndex.has(c.callId))?.callId;
    if (clash !== undefined) throw new UserError("store_duplicate", `rollout ${bundle.rolloutId}: ${clash} conflicts with an existing row`);
    for (const s of bundle.sessions) this.addSession(s);
    for (const c of bundle.calls) this.insertCall(c);
    const landedAt = nextLandedAt(this.lastLandedAt);
    this.lastLandedAt = landedAt;
    this.landed.set(bundle.rolloutId, { rolloutId: bundle.rolloutId, attempt: bundle.attempt, nodeId: bundle.nodeId, result: structuredClone(bundle.result), landedAt });
    return { status: "inserted" };
  }

  listLandedRollouts(filter: { afterLandedAt?: number; limit?: number } = {}): LandedRollout[] {
    const out: LandedRollout[] = [];
    // Map order is landing order, and landedAt strictly increases with it.
    for (const r of this.landed.values()) {
      if (filter.afterLandedAt !== undefined && r.landedAt <= filter.afterLandedAt) continue;
      if (filter.limit !== undefined && out.length >= filter.limit) break;
      out.push(structuredClone(r));
    }
    return out;
  }

  close(): void {
    this.closed = true;
  }

  private select(query: CallQuery): StoredCall[] {
    const list =
      query.sessionId !== undefined ? (this.callsBySession.get(query.sessionId) ?? []) : query.rolloutId !== undefined ? (this.callsByRollout.get(query.rolloutId) ?? []) : this.calls;
    const out: StoredCall[] = [];
    for (let i = query.afterSeq === undefined ? 0 : firstAfter(list, query.afterSeq); i < list.length; i++) {
      const e = list[i] as StoredCall;
      if (query.sessionId !== undefined && e.record.sessionId !== query.sessionId) continue;
      if (query.rolloutId !== undefined && e.record.rolloutId !== query.rolloutId) continue;
      if (query.afterSeq !== undefined && e.seq <= query.afterSeq) continue;
      out.push(e);
      if (query.limit !== undefined && out.length >= query.limit) break;
    }
    return out;
  }

  private assertOpen(): void {
    if (this.closed) throw new UserError("store_closed", "the memory store is closed");
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Index of the first entry with seq > `seq` in a list sorted by seq. */
function firstAfter(list: readonly StoredCall[], seq: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((list[mid] as StoredCall).seq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
