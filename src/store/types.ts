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

/**
 * A finished rollout as a rollout node ships it to the run's central store: every session and call one attempt
 * recorded, with its result. It lands whole or not at all, so a dead attempt's partial records never reach training.
 */
export interface RolloutBundle {
  /** Schema version of this shape (it crosses machines); 1 today. */
  bundleVersion: 1;
  rolloutId: string;
  /** The job attempt that produced it (1-based). */
  attempt: number;
  /** The rollout node that ran it. */
  nodeId: string;
  /** Sessions without credentials: a node's per-rollout proxy credentials never leave the node. */
  sessions: SessionInfo[];
  /** In the order the node's proxy recorded them (parents before children). */
  calls: CallRecord[];
  /** The rollout's result line (what rollouts.jsonl holds); opaque to the store. */
  result: Record<string, unknown>;
}

/**
 * At-least-once delivery made exactly-once: the first bundle of a rollout lands; a later one (a retried job whose
 * first attempt did finish, a re-sent upload) is reported as a duplicate and changes nothing.
 */
export type IngestOutcome = { status: "inserted" } | { status: "duplicate"; landedAttempt: number };

/** A landed rollout's result, as readers (the trainer, reports, the dashboard) list them. */
export interface LandedRollout {
  rolloutId: string;
  attempt: number;
  nodeId: string;
  result: Record<string, unknown>;
  landedAt: number;
}

/** Optional capability: a store that rollout nodes can ship finished rollouts into. */
export interface RolloutIngest {
  ingestRollout(bundle: RolloutBundle): IngestOutcome;
  /**
   * Optional capability: the same, without blocking the event loop while a remote store is waited on. A rollout node
   * lands through it where offered, so its queue locks and heartbeat keep being renewed during a slow landing.
   */
  ingestRolloutAsync?(bundle: RolloutBundle): Promise<IngestOutcome>;
  listLandedRollouts(filter?: { afterLandedAt?: number; limit?: number }): LandedRollout[];
}
