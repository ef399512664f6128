import type Database from "better-sqlite3";

/** One row of a calls table: the indexed columns of a call, no tokens, texts or blobs (cheap to list by the thousand). */
export interface CallSummary {
  seq: number;
  callId: string;
  sessionId: string;
  rolloutId: string | null;
  harness: string | null;
  agentRole: string | null;
  status: "ok" | "error";
  finishReason: string | null;
  policyVersion: number | null;
  breakKind: string | null;
  promptTokens: number;
  completionTokens: number;
  receivedAt: number;
  recordedAt: number;
}

export interface CallSummaryQuery {
  harness?: string;
  status?: "ok" | "error";
  rolloutId?: string;
  /** Rollout ids starting with this text (a step's rollouts share their `s<step>-` prefix). */
  rolloutPrefix?: string;
  /** Keyset paging: only calls inserted before (`beforeSeq`) or after (`afterSeq`) this one; O(page), unlike `offset`. */
  beforeSeq?: number;
  afterSeq?: number;
  /** Newest first (the default) or in insertion order. */
  order?: "newest" | "oldest";
  offset?: number;
  limit?: number;
}

export interface CallSummaryPage {
  /**
   * Calls matching the filter; null when counting them would scan the whole table (a harness or status filter
   * without a rollout or step to narrow it by index).
   */
  total: number | null;
  rows: CallSummary[];
  /** Whether more rows follow this page in its order. */
  more: boolean;
}

interface Row {
  seq: number;
  call_id: string;
  session_id: string;
  rollout_id: string | null;
  harness: string | null;
  agent_role: string | null;
  status: "ok" | "error";
  finish_reason: string | null;
  policy_version: number | null;
  break_kind: string | null;
  prompt_len: number;
  completion_len: number;
  received_at: number;
  recorded_at: number;
}

const COLUMNS = "seq, call_id, session_id, rollout_id, harness, agent_role, status, finish_reason, policy_version, break_kind, prompt_len, completion_len, received_at, recorded_at";

/** The first string after every string starting with `prefix` (its last character incremented): a range the rollout index serves. */
function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

/**
 * A page of call summaries and the filtered total, read with the given statement preparer (the store caches
 * statements per query shape). Paging is by OFFSET over the primary key: the first pages, which a table shows, stop
 * after `limit` rows whatever the table's size.
 */
export function callSummaryPage(prepare: (sql: string) => Database.Statement, q: CallSummaryQuery): CallSummaryPage {
  const conds: string[] = [];
  const params: (string | number)[] = [];
  if (q.harness !== undefined) {
    conds.push("harness = ?");
    params.push(q.harness);
  }
  if (q.status !== undefined) {
    conds.push("status = ?");
    params.push(q.status);
  }
  if (q.rolloutId !== undefined) {
    conds.push("rollout_id = ?");
    params.push(q.rolloutId);
  }
  if (q.rolloutPrefix !== undefined && q.rolloutPrefix !== "") {
    // A range rather than LIKE: it uses the (rollout_id, seq) index whatever the LIKE pragmas say.
    conds.push("rollout_id >= ? AND rollout_id < ?");
    params.push(q.rolloutPrefix, prefixEnd(q.rolloutPrefix));
  }
  const countable = (q.harness === undefined && q.status === undefined) || q.rolloutId !== undefined || (q.rolloutPrefix ?? "") !== "";
  const filter = [...conds];
  const keyset: (string | number)[] = [];
  if (q.beforeSeq !== undefined) {
    conds.push("seq < ?");
    keyset.push(q.beforeSeq);
  }
  if (q.afterSeq !== undefined) {
    conds.push("seq > ?");
    keyset.push(q.afterSeq);
  }
  const where = (c: string[]): string => (c.length ? ` WHERE ${c.join(" AND ")}` : "");
  const limit = Math.min(1000, Math.max(0, Math.floor(q.limit ?? 50)));
  const offset = Math.max(0, Math.floor(q.offset ?? 0));
  // Paging forwards from `afterSeq` reads upwards; the page is still returned in the order asked for.
  const newest = q.order !== "oldest";
  const ascending = q.afterSeq !== undefined && q.beforeSeq === undefined ? true : !newest;
  const total = countable ? (prepare(`SELECT COUNT(*) AS n FROM calls${where(filter)}`).get(...params) as { n: number }).n : null;
  const found = prepare(`SELECT ${COLUMNS} FROM calls${where(conds)} ORDER BY seq ${ascending ? "ASC" : "DESC"} LIMIT ? OFFSET ?`).all(...params, ...keyset, limit + 1, offset) as Row[];
  const more = found.length > limit;
  const rows = found.slice(0, limit);
  if (ascending === newest) rows.reverse();
  return {
    total,
    more,
    rows: rows.map((r) => ({
      seq: r.seq,
      callId: r.call_id,
      sessionId: r.session_id,
      rolloutId: r.rollout_id,
      harness: r.harness,
      agentRole: r.agent_role,
      status: r.status,
      finishReason: r.finish_reason,
      policyVersion: r.policy_version,
      breakKind: r.break_kind,
      promptTokens: r.prompt_len,
      completionTokens: r.completion_len,
      receivedAt: r.received_at,
      recordedAt: r.recorded_at,
    })),
  };
}
