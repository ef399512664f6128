import type { CallRecord, SessionInfo } from "../icr/records.js";

/** A call record with its insertion sequence number (monotonic per store; what `afterSeq` compares against). */
export interface StoredCall {
  seq: number;
  record: CallRecord;
}

export interface CallQuery {
  sessionId?: string;
  rolloutId?: string;
  /** Only calls recorded after this call id's insertion order (for incremental readers). */
  afterSeq?: number;
  limit?: number;
}

/** What a writer already has in serialised form, so a store need not serialise it again. */
export interface InsertHints {
  /** `record.rawRequest` as the client sent it: JSON text whose parse is `rawRequest`. */
  rawRequestJson?: string;
}

/**
 * Persistent storage of sessions and call records. The SQLite adapter is the embedded default; the interface stays
 * narrow so a networked store can replace it. `insertCall` must be durable when it returns.
 */
export interface Store {
  readonly kind: string;
  createSession(session: SessionInfo, credential: string): void;
  /** Looks a session up by the credential issued for it. */
  sessionByCredential(credential: string): SessionInfo | null;
  getSession(sessionId: string): SessionInfo | null;
  listSessions(filter?: { rolloutId?: string }): SessionInfo[];
  insertCall(record: CallRecord, hints?: InsertHints): void;
  getCall(callId: string): CallRecord | null;
  /** Calls in insertion order. */
  listCalls(query?: CallQuery): CallRecord[];
  /** Like listCalls, with each record's sequence number, for incremental readers (`afterSeq`). */
  listCallEntries(query?: CallQuery): StoredCall[];
  countCalls(query?: { sessionId?: string; rolloutId?: string }): number;
  close(): void;
}
