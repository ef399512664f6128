import type { ChatRenderer } from "../chat/renderer.js";
import type { Conversation } from "../chat/types.js";
import type { CallRecord, HistoryBreak, RealignedTurn } from "../icr/records.js";
import type { Tokenizer } from "../tokenizer/types.js";

/** How a new call's prompt tokens were obtained. */
export interface PromptPlan {
  promptTokens: number[];
  /** The call this prompt extends (token-exact) or branches from (retry / regeneration); null for a new root. */
  parentCallId: string | null;
  /** Leading prompt tokens copied from the parent's prompt + completion. */
  reusedPrefixTokens: number;
  /** Set when the harness (or the template) rewrote history and the prompt was rendered from what it sent. */
  break: HistoryBreak | null;
  /** Turns the harness changed only in form whose sampled tokens the prompt keeps (not breaks). */
  realigned: RealignedTurn[];
}

/**
 * Builds token-exact prompts for a session: when a request's history contains assistant turns this proxy produced,
 * their tokens are exactly the sampled tokens; otherwise the conversation is rendered and the break classified.
 */
export interface HistoryPlanner {
  plan(sessionId: string, conversation: Conversation, codec: { tokenizer: Tokenizer; renderer: ChatRenderer }): PromptPlan;
  /**
   * Makes a finished call available as a parent for later calls of its session. Passing the codec lets the planner
   * prepare the call's splice data now rather than on the next `plan`.
   */
  remember(record: CallRecord, codec?: { tokenizer: Tokenizer; renderer: ChatRenderer }): void;
}
