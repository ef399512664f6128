import { InfraError } from "../core/errors.js";
import { decodeInt32 } from "./blob.js";
import { joinPrompt } from "./prompt-delta.js";
import { applyTextDelta } from "./text-delta.js";

/** The columns of a stored call that deltas touch (schema 3). */
export interface DeltaRow {
  call_id: string;
  prompt_tokens: Uint8Array;
  completion_tokens: Uint8Array;
  prompt_base_call_id: string | null;
  prompt_base_len: number;
  messages_json: string;
  raw_request_json: string | null;
  text_base_call_id: string | null;
  messages_keep: number;
  messages_tail: number;
  raw_request_keep: number;
  raw_request_tail: number;
  tools_json: string;
  tools_keep: number;
  tools_tail: number;
}

/** A call's whole prompt, completion and JSON texts, with every delta applied. */
export interface ResolvedCall {
  prompt: number[];
  completion: number[];
  messagesJson: string;
  rawRequestJson: string | null;
  toolsJson: string;
}

/**
 * Turns stored rows back into whole calls. One resolver serves one read: rows resolved earlier in it (a listing
 * returns bases before the calls that extend them) are reused; a base outside the read is fetched by id, and a chain
 * of them is walked iteratively (a 500-turn session must not recurse 500 deep).
 */
export class DeltaResolver {
  private readonly seen = new Map<string, ResolvedCall>();

  constructor(
    private readonly rowById: (callId: string) => DeltaRow | undefined,
    private readonly where: string,
  ) {}

  resolve(row: DeltaRow): ResolvedCall {
    const known = this.seen.get(row.call_id);
    if (known) return known;
    const stack: DeltaRow[] = [row];
    const onStack = new Set<string>([row.call_id]);
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as DeltaRow;
      const missing = [top.prompt_base_call_id, top.text_base_call_id].find((b) => b !== null && !this.seen.has(b));
      if (missing !== undefined && missing !== null) {
        if (onStack.has(missing)) throw this.corrupt(`call ${top.call_id}'s deltas form a cycle through ${missing}`);
        const base = this.rowById(missing);
        if (!base) throw this.corrupt(`call ${top.call_id} is stored as a delta of call ${missing}, which is missing`);
        stack.push(base);
        onStack.add(missing);
        continue;
      }
      stack.pop();
      this.seen.set(top.call_id, this.apply(top));
    }
    return this.seen.get(row.call_id) as ResolvedCall;
  }

  /** A row whose bases are resolved already. */
  private apply(row: DeltaRow): ResolvedCall {
    const completion = decodeInt32(row.completion_tokens);
    const suffix = decodeInt32(row.prompt_tokens);
    const promptBase = row.prompt_base_call_id === null ? null : (this.seen.get(row.prompt_base_call_id) as ResolvedCall);
    const prompt = promptBase ? joinPrompt(promptBase, row.prompt_base_len, suffix) : suffix;
    const textBase = row.text_base_call_id === null ? null : (this.seen.get(row.text_base_call_id) as ResolvedCall);
    if (!textBase) return { prompt, completion, messagesJson: row.messages_json, rawRequestJson: row.raw_request_json, toolsJson: row.tools_json };
    const messagesJson = row.messages_keep + row.messages_tail > 0 ? applyTextDelta(textBase.messagesJson, row.messages_keep, row.messages_tail, row.messages_json) : row.messages_json;
    const toolsJson = row.tools_keep + row.tools_tail > 0 ? applyTextDelta(textBase.toolsJson, row.tools_keep, row.tools_tail, row.tools_json) : row.tools_json;
    let rawRequestJson = row.raw_request_json;
    if (rawRequestJson !== null && row.raw_request_keep + row.raw_request_tail > 0) {
      if (textBase.rawRequestJson === null) throw this.corrupt(`call ${row.call_id}'s raw request is a delta of call ${row.text_base_call_id ?? ""}, which has none`);
      rawRequestJson = applyTextDelta(textBase.rawRequestJson, row.raw_request_keep, row.raw_request_tail, rawRequestJson);
    }
    return { prompt, completion, messagesJson, rawRequestJson, toolsJson };
  }

  private corrupt(what: string): InfraError {
    return new InfraError("store_corrupt", `${this.where}: ${what}`);
  }
}
