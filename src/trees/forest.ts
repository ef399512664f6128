import type { CallRecord, SessionInfo } from "../icr/records.js";
import type { Store } from "../store/types.js";
import { buildSessionTree } from "./session-tree.js";
import type { RolloutForest, SessionTree } from "./types.js";

/** Key used for sessions that belong to no rollout (interactive use of the proxy): each is its own "rollout". */
export function rolloutKey(rolloutId: string | null, sessionId: string): string {
  return rolloutId ?? `session:${sessionId}`;
}

/**
 * Groups records by session (keeping recording order) and sessions by rollout, builds each session's tree and links
 * sub-agent sessions to the calls that spawned them.
 */
export function buildForests(records: readonly CallRecord[], sessions: readonly SessionInfo[] = []): RolloutForest[] {
  const bySession = new Map<string, CallRecord[]>();
  for (const r of records) {
    const list = bySession.get(r.sessionId);
    if (list) list.push(r);
    else bySession.set(r.sessionId, [r]);
  }
  const info = new Map(sessions.map((s) => [s.sessionId, s]));
  const resolveCallId = callIdResolver(records);
  const forests = new Map<string, RolloutForest>();
  for (const [sessionId, recs] of bySession) {
    const tree = buildSessionTree(recs, info.get(sessionId) ?? null, { resolveCallId });
    const key = rolloutKey(tree.rolloutId, sessionId);
    let forest = forests.get(key);
    if (!forest) {
      forest = { rolloutId: key, trees: [], spawnLinks: [] };
      forests.set(key, forest);
    }
    forest.trees.push(tree);
  }
  for (const forest of forests.values()) linkSubAgents(forest);
  return [...forests.values()];
}

/**
 * Harnesses name the spawning call by what they saw: our call id when the proxy told them, otherwise the protocol's
 * response id (`chatcmpl-…`, `msg_…`, `resp_…`). Map the latter to call ids through the recorded raw responses.
 */
export function callIdResolver(records: readonly CallRecord[]): (id: string) => string {
  const byResponseId = new Map<string, string>();
  for (const r of records) {
    const raw = r.rawResponse;
    if (raw !== null && typeof raw === "object" && "id" in raw && typeof raw.id === "string") byResponseId.set(raw.id, r.callId);
  }
  return (id) => byResponseId.get(id) ?? id;
}

function linkSubAgents(forest: RolloutForest): void {
  const owner = new Map<string, SessionTree>();
  for (const t of forest.trees) for (const c of t.calls) owner.set(c.callId, t);
  for (const t of forest.trees) {
    for (const seg of t.segments) {
      if (seg.spawnedBy === null) continue;
      const parent = owner.get(seg.spawnedBy);
      forest.spawnLinks.push({ sessionId: t.sessionId, segment: seg.index, rootCallId: seg.rootCallId, spawnedByCallId: seg.spawnedBy, parentSessionId: parent?.sessionId ?? t.session?.parentSessionId ?? null });
    }
  }
  // Parents first, then the sub-agent sessions they spawned, so printing and packing follow the spawn order.
  const depth = (t: SessionTree, seen = 0): number => {
    if (t.spawnedByCallId === null || seen > forest.trees.length) return 0;
    const p = owner.get(t.spawnedByCallId);
    return p && p !== t ? 1 + depth(p, seen + 1) : 1;
  };
  forest.trees.sort((a, b) => depth(a) - depth(b));
}

/** Reads the calls (and sessions) of a store, optionally only one rollout or session, and builds their forests. */
export function forestsFromStore(store: Store, filter: { rolloutId?: string; sessionId?: string } = {}): RolloutForest[] {
  const query: { rolloutId?: string; sessionId?: string } = {};
  if (filter.rolloutId !== undefined) query.rolloutId = filter.rolloutId;
  if (filter.sessionId !== undefined) query.sessionId = filter.sessionId;
  const records = store.listCalls(query);
  const sessionIds = new Set(records.map((r) => r.sessionId));
  const sessions = [...sessionIds].flatMap((id) => {
    const s = store.getSession(id);
    return s ? [s] : [];
  });
  return buildForests(records, sessions);
}
