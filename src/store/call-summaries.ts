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
  /** Newest first (the default) or in insertion order. */
  order?: "newest" | "oldest";
  offset?: number;
  limit?: number;
}

export interface CallSummaryPage {
  total: number;
  rows: CallSummary[];
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

/** `LIKE` with the prefix's own `%`, `_` and `\` taken literally. */
function likePrefix(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
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
  if (q.rolloutPrefix !== undefined) {
    conds.push("rollout_id LIKE ? ESCAPE '\\'");
    params.push(likePrefix(q.rolloutPrefix));
  }
  const where = conds.length ? ` WHERE ${conds.join(" AND ")}` : "";
  const limit = Math.min(1000, Math.max(0, Math.floor(q.limit ?? 50)));
  const offset = Math.max(0, Math.floor(q.offset ?? 0));
  const order = q.order === "oldest" ? "ASC" : "DESC";
  const total = (prepare(`SELECT COUNT(*) AS n FROM calls${where}`).get(...params) as { n: number }).n;
  const rows = prepare(`SELECT ${COLUMNS} FROM calls${where} ORDER BY seq ${order} LIMIT ? OFFSET ?`).all(...params, limit, offset) as Row[];
  return {
    total,
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
