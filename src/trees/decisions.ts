import type { ToolCall } from "../chat/types.js";
import type { BranchLabel, RolloutForest } from "./types.js";

/** One sampled decision: a tool (or sub-agent) call the policy wrote. */
export interface Decision {
  callId: string;
  sessionId: string;
  /** Index among the call's tool calls (= the parser's order, as in the record's spans). */
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
