import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { parseAdvantageConfig, planGroups, type AdvantageConfig, type ScoredRollout } from "../advantage/index.js";
import type { CallRecord, SessionInfo } from "../icr/records.js";
import { loadTokenizer, type Tokenizer } from "../tokenizer/index.js";
import { forestsFromStore } from "../trees/forest.js";
import { viewForest, type ForestView } from "../trees/view.js";
import { groupTree, type GroupMember, type GroupTreeNode } from "./group-tree.js";
import type { RunData } from "./run-data.js";

/** Most completion tokens one call's token view carries (a page, not a dump). */
const MAX_TOKENS = 4000;

export interface TokenView {
  ids: number[];
  /** Each token decoded alone (null: the run has no tokenizer the dashboard can load). */
  text: string[] | null;
  logprobs: number[];
  /** Outcome advantage every trained token of this call gets (GRPO: the rollout's, relative to its group). */
  advantage: number;
  /** 1 where the loss ignores the token: an excluded rollout, a failed call, or a prefix another call sampled first. */
  ignored: number[];
  truncated: boolean;
}

export interface CallDetail {
  callId: string;
  sessionId: string;
  agentRole: string | null;
  status: "ok" | "error";
  error: CallRecord["error"];
  finishReason: string | null;
  policyVersion: number | null;
  parentCallId: string | null;
  spawnedByCallId: string | null;
  break: CallRecord["break"];
  messages: CallRecord["messages"];
  tools: CallRecord["tools"];
  response: CallRecord["response"];
  promptTokens: number;
  tokens: TokenView;
}

export interface RolloutDetail {
  rolloutId: string;
  result: Record<string, unknown> | null;
  sessions: SessionInfo[];
  calls: CallDetail[];
  trees: ForestView | null;
  advantage: { value: number; included: boolean; excluded: string | null; group: string; groupMean: number | null; groupStd: number | null } | null;
  groupTree: GroupTreeNode | null;
  /**
   * Sessions recorded under this rollout id by attempts that ended in a retryable infrastructure error and were run
   * again (src/rollout/run-one.ts): not the result's sessions, never trained, shown for debugging.
   */
  earlierAttemptSessions: string[];
  /** How the advantages shown were computed. */
  advantageNote: string;
}

/** The run's advantage settings from its config.yaml (defaults when it has none or they do not parse). */
function advantageConfig(run: RunData): AdvantageConfig {
  const path = join(run.dir, "config.yaml");
  try {
    if (existsSync(path)) {
      const doc = parseYaml(readFileSync(path, "utf8")) as Record<string, unknown> | null;
      if (doc && typeof doc === "object" && doc.advantage !== undefined) return parseAdvantageConfig(doc.advantage);
    }
  } catch {
    // A config this version cannot parse: the defaults still show the sign of each rollout's advantage.
  }
  return parseAdvantageConfig({});
}

const tokenizers = new Map<string, Tokenizer | null>();

function tokenizerOf(run: RunData): Tokenizer | null {
  const dir = run.latestPolicyDir();
  if (dir === null) return null;
  if (!tokenizers.has(dir)) {
    try {
      tokenizers.set(dir, loadTokenizer(dir));
    } catch {
      tokenizers.set(dir, null);
    }
  }
  return tokenizers.get(dir) ?? null;
}

function scored(r: Record<string, unknown>): ScoredRollout {
  return {
    rolloutId: String(r.rolloutId),
    taskId: String(r.taskId ?? ""),
    harness: String(r.harness ?? ""),
    family: String(r.family ?? ""),
    split: String(r.split ?? ""),
    status: (r.status ?? "ok") as ScoredRollout["status"],
    score: typeof r.score === "number" ? r.score : 0,
    verifier: null,
  };
}

/** The main session's last call, prompt + completion: the trajectory the group tree compares. */
function trajectory(calls: readonly CallRecord[], sessions: readonly SessionInfo[], own: ReadonlySet<string> | null): number[] {
  const main = new Set(sessions.filter((s) => s.parentSessionId === null && (own === null || own.has(s.sessionId))).map((s) => s.sessionId));
  // No session info (an old store): every call. A result that names its sessions: only those, even if none.
  const mine = calls.filter((c) => (main.size === 0 && own === null) || main.has(c.sessionId));
  const last = mine[mine.length - 1];
  return last ? [...last.promptTokens, ...last.completionTokens] : [];
}

/** The sessions of the attempt that made the result (null: no result line, or one without sessionIds). */
function ownSessions(result: Record<string, unknown> | null): Set<string> | null {
  const ids = result?.sessionIds;
  return Array.isArray(ids) ? new Set(ids.filter((x): x is string => typeof x === "string")) : null;
}

/** Everything the rollout page shows, read from the run's rollouts.jsonl and its call store. */
export function rolloutDetail(run: RunData, rolloutId: string): RolloutDetail | null {
  const result = run.rollouts.result(rolloutId);
  const store = run.openStore();
  const records = store ? store.listCalls({ rolloutId }) : [];
  if (!result && records.length === 0) return null;
  const sessions = store ? store.listSessions({ rolloutId }) : [];
  const own = ownSessions(result);
  const earlier = own ? sessions.filter((s) => !own.has(s.sessionId)).map((s) => s.sessionId) : [];
  const retried = new Set(earlier);
  const forests = store ? forestsFromStore(store, { rolloutId }) : [];
  const trees = forests[0] ? viewForest(forests[0]) : null;
  const trainable = new Map<string, number>();
  for (const s of trees?.sessions ?? []) for (const c of s.calls) trainable.set(c.callId, c.trainableTokens);

  const config = advantageConfig(run);
  const group = run.rollouts.group(rolloutId);
  const groupResults = group.map((g) => run.rollouts.result(g.rolloutId)).filter((r): r is Record<string, unknown> => r !== null);
  const plan = groupResults.length > 0 ? planGroups(groupResults.map(scored), config) : null;
  const mine = plan?.rollouts.get(rolloutId) ?? null;
  const summary = mine ? plan?.groups.find((g) => g.key === mine.group) : undefined;
  const advantage = mine ? { value: mine.advantage, included: mine.included, excluded: mine.excluded, group: mine.group, groupMean: summary?.mean ?? null, groupStd: summary?.std ?? null } : null;

  const tok = tokenizerOf(run);
  const calls: CallDetail[] = records.map((r) => {
    const n = Math.min(r.completionTokens.length, MAX_TOKENS);
    const ids = r.completionTokens.slice(0, n);
    const owned = trainable.get(r.callId) ?? r.completionTokens.length;
    const shared = r.completionTokens.length - owned;
    const whole = r.status !== "ok" || !(advantage?.included ?? true) || retried.has(r.sessionId);
    return {
      callId: r.callId,
      sessionId: r.sessionId,
      agentRole: r.agentRole,
      status: r.status,
      error: r.error,
      finishReason: r.finishReason,
      policyVersion: r.policyVersion,
      parentCallId: r.parentCallId,
      spawnedByCallId: r.spawnedByCallId,
      break: r.break,
      messages: r.messages,
      tools: r.tools,
      response: r.response,
      promptTokens: r.promptTokens.length,
      tokens: {
        ids,
        text: tok ? ids.map((id) => tok.decode([id])) : null,
        logprobs: r.logprobs.slice(0, n).map((x) => Math.round(x * 1e4) / 1e4),
        advantage: advantage?.value ?? 0,
        ignored: ids.map((_, i) => (whole || i < shared ? 1 : 0)),
        truncated: n < r.completionTokens.length,
      },
    };
  });

  let tree: GroupTreeNode | null = null;
  if (store && group.length > 1) {
    const members: GroupMember[] = group.map((g) => ({
      rolloutId: g.rolloutId,
      reward: g.score,
      tokens: g.rolloutId === rolloutId ? trajectory(records, sessions, own) : trajectory(store.listCalls({ rolloutId: g.rolloutId }), store.listSessions({ rolloutId: g.rolloutId }), ownSessions(run.rollouts.result(g.rolloutId))),
    }));
    tree = groupTree(members);
  }
  const note = `${config.estimator} advantages over the group ${advantage?.group ?? "(none)"} (group by ${config.groupBy.join(" × ")}${config.normalizeStd ? ", divided by the group's std" : ""}), recomputed from the rollouts' rewards`;
  return { rolloutId, result, sessions, calls, trees, advantage, groupTree: tree, earlierAttemptSessions: earlier, advantageNote: note };
}
