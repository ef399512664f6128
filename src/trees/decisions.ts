import type { ToolCall } from "../chat/types.js";
import type { ProcessReward } from "./rewards.js";
import type { BranchLabel, RolloutForest } from "./types.js";

/** One sampled decision: a tool (or sub-agent) call the policy wrote. */
export interface Decision {
  callId: string;
  sessionId: string;
  /** Index among the call's tool calls (= the parser's order, which `tool_call` reward targets use). */
  toolCallIndex: number;
  toolCall: ToolCall;
  /** Label of the segment the call belongs to. */
  label: BranchLabel;
  receivedAt: number;
}

/**
 * A rollout's decisions in the order they were made: calls by arrival time (recording order breaks ties), tool calls in
 * the order the model wrote them. `labels` restricts to segments with those labels (e.g. only the main agent's).
 */
export function rolloutDecisions(forest: RolloutForest, options: { labels?: readonly BranchLabel[] } = {}): Decision[] {
  const out: (Decision & { order: number })[] = [];
  let order = 0;
  for (const tree of forest.trees) {
    for (const c of tree.calls) {
      const label = tree.segments[c.segment]?.label ?? "main";
      order++;
      if (options.labels && !options.labels.includes(label)) continue;
      (c.record.response?.toolCalls ?? []).forEach((toolCall, toolCallIndex) => {
        out.push({ callId: c.callId, sessionId: tree.sessionId, toolCallIndex, toolCall, label, receivedAt: c.record.timings.receivedAt, order });
      });
    }
  }
  out.sort((a, b) => a.receivedAt - b.receivedAt || a.order - b.order || a.toolCallIndex - b.toolCallIndex);
  return out.map(({ order: _order, ...d }) => d);
}

/**
 * Turns an ordered per-decision signal (a verifier sub-score list such as one entry per search) into process rewards:
 * the k-th value goes to the k-th decision that `match` accepts, on that tool call's action / args / all tokens.
 * Values without a matching decision (or decisions without a value) are counted, never guessed.
 */
export function decisionRewards(
  decisions: readonly Decision[],
  values: readonly number[],
  options: { match?: (d: Decision) => boolean; part?: "action" | "args" | "all"; scale?: number; source?: string } = {},
): { rewards: ProcessReward[]; unmatchedValues: number; unmatchedDecisions: number } {
  const matched = options.match ? decisions.filter(options.match) : [...decisions];
  const n = Math.min(matched.length, values.length);
  const rewards: ProcessReward[] = [];
  for (let k = 0; k < n; k++) {
    const d = matched[k] as Decision;
    const r: ProcessReward = { callId: d.callId, value: (values[k] as number) * (options.scale ?? 1), target: { kind: "tool_call", index: d.toolCallIndex, part: options.part ?? "all" } };
    if (options.source !== undefined) r.source = options.source;
    rewards.push(r);
  }
  return { rewards, unmatchedValues: values.length - n, unmatchedDecisions: matched.length - n };
}
