import type { CallDigest } from "./prompt-delta.js";

/** What the writer keeps of a call it stored, as the base of the next call's deltas. */
export interface RecentCall {
  /** Length + digest of prompt + completion (prompt-delta.ts): not the tokens, which would keep ~40 kB arrays alive. */
  tokens: CallDigest;
  /** Its JSON texts as stored whole (text-delta.ts); dropped first when the texts exceed their memory budget. */
  messagesJson: string | null;
  rawRequestJson: string | null;
  toolsJson: string | null;
}

/** Recent calls kept (LRU by insertion): a base is almost always its session's latest call. */
const DEFAULT_CAPACITY = 4096;
/** Characters of texts kept for text deltas; beyond it the oldest calls keep their digests only. */
const DEFAULT_TEXT_BUDGET = 32 * 1024 * 1024;

export class RecentCalls {
  private readonly map = new Map<string, RecentCall>();
  private textChars = 0;

  constructor(
    private readonly capacity = DEFAULT_CAPACITY,
    private readonly textBudget = DEFAULT_TEXT_BUDGET,
  ) {}

  get(callId: string): RecentCall | undefined {
    return this.map.get(callId);
  }

  set(callId: string, call: RecentCall): void {
    this.delete(callId);
    this.map.set(callId, call);
    this.textChars += textSize(call);
    if (this.map.size > this.capacity) this.delete(this.map.keys().next().value as string);
    if (this.textChars > this.textBudget) {
      for (const old of this.map.values()) {
        if (this.textChars <= this.textBudget / 2) break;
        this.textChars -= textSize(old);
        old.messagesJson = null;
        old.rawRequestJson = null;
        old.toolsJson = null;
      }
    }
  }

  /** Forgets a call (its insert was rolled back: it must not become a delta base). */
  delete(callId: string): void {
    const old = this.map.get(callId);
    if (!old) return;
    this.textChars -= textSize(old);
    this.map.delete(callId);
  }
}

function textSize(c: RecentCall): number {
  return (c.messagesJson?.length ?? 0) + (c.rawRequestJson?.length ?? 0) + (c.toolsJson?.length ?? 0);
}
