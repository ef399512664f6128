import { rolloutDecisions } from "../trees/decisions.js";
import type { BranchLabel, RolloutForest, TreeCall } from "../trees/types.js";
import { BRANCH_LABELS } from "../trees/types.js";
import type { ProcessConfig } from "./config.js";

/** One decision of the main agent: a sampled call, or one tool call inside it. */
export interface Decision {
  /** Decision index k (0-based) in the rollout. */
  index: number;
  callId: string;
  /** Index of the tool call in the call's response (parser order) for `tool` decisions; null for whole-call decisions. */
  toolCall: number | null;
}

const NOT_MAIN = new Set<BranchLabel>(["sub-agent", "side"]);
const MAIN_LABELS = BRANCH_LABELS.filter((l) => !NOT_MAIN.has(l));

/**
 * The main agent's sampled calls in the order the harness made them: calls of sessions that are not sub-agents, outside
 * sub-agent and side segments (by label or lineage: a rewritten side conversation is not the main agent's), ordered by
 * arrival. Of calls with the same prompt (a retry chain) only the last counts:
 * the harness re-asked because it discarded the earlier answer.
 */
export function mainAgentCalls(forest: RolloutForest): TreeCall[] {
  const calls: TreeCall[] = [];
  for (const tree of forest.trees) {
    if (tree.subAgent) continue;
    for (const c of tree.calls) if (!NOT_MAIN.has(c.label) && !NOT_MAIN.has(tree.segments[c.segment]?.lineage ?? "main")) calls.push(c);
  }
  calls.sort((a, b) => a.record.timings.receivedAt - b.record.timings.receivedAt || a.index - b.index);
  const lastOfChain = new Map<string, TreeCall>();
  for (const c of calls) lastOfChain.set(c.retryOf ?? c.callId, c);
  const keep = new Set(lastOfChain.values());
  return calls.filter((c) => keep.has(c));
}

/**
 * Maps entry k of a per-decision sub-score list onto the call that made decision k. `calls`: the k-th main-agent call;
 * `tool`: the k-th tool call named `config.tool` in the main agent's responses (what the verifier logged is what the
 * harness executed, in order). Entries beyond the decisions found are unmapped and ignored.
 */
export function decisionsOf(forest: RolloutForest, config: Pick<ProcessConfig, "decisions" | "tool">): Decision[] {
  const calls = mainAgentCalls(forest);
  const out: Decision[] = [];
  if (config.decisions === "calls") {
    for (const c of calls) if (c.record.completionTokens.length > 0) out.push({ index: out.length, callId: c.callId, toolCall: null });
    return out;
  }
  // Same order as the trees' own decision list (arrival time, then the model's tool-call order), minus superseded retries.
  const live = new Set(calls.map((c) => c.callId));
  for (const d of rolloutDecisions(forest, { labels: MAIN_LABELS })) {
    if (live.has(d.callId) && d.toolCall.name === config.tool) out.push({ index: out.length, callId: d.callId, toolCall: d.toolCallIndex });
  }
  return out;
}
