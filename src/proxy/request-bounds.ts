import type { Conversation } from "../chat/types.js";
import { HarnessError, UserError } from "../core/errors.js";
import { MAX_JSON_DEPTH, jsonNestingDepth } from "../core/json-depth.js";
import type { Tokenizer } from "../tokenizer/types.js";
import type { ProxyContext } from "./context.js";

/**
 * Checks a parsed request must pass before any rendering or tokenizing: the work a request may cost the proxy is
 * bounded by what it could possibly get back.
 */

/** Tool-call arguments are JSON inside JSON strings: the body's depth check cannot see them. */
export function checkArgumentDepth(conversation: Conversation): void {
  conversation.messages.forEach((m, i) => {
    m.toolCalls?.forEach((c, k) => {
      if (jsonNestingDepth(c.arguments, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
        // Positions in the normalised conversation: protocols number their items differently.
        throw new HarnessError("json_too_deep", `the arguments of tool call ${k + 1} in conversation message ${i + 1} nest more than ${MAX_JSON_DEPTH} levels deep`);
      }
    });
  });
}

const maxTokenBytesCache = new WeakMap<Tokenizer, Map<boolean, number>>();

/**
 * The most UTF-8 bytes one token stands for (`ordinaryOnly`: leaving special tokens out); null when the tokenizer
 * cannot say (then no estimate is made).
 */
export function maxTokenBytes(tokenizer: Tokenizer, ordinaryOnly = false): number | null {
  const cached = maxTokenBytesCache.get(tokenizer)?.get(ordinaryOnly);
  if (cached !== undefined) return cached;
  if (!tokenizer.tokenBytes) return null;
  const specials = new Set(ordinaryOnly ? tokenizer.specialTokens.values() : []);
  let max = 1;
  for (let id = 0; id < tokenizer.vocabSize; id++) {
    if (specials.has(id)) continue;
    let n: number;
    try {
      n = tokenizer.tokenBytes(id).length;
    } catch {
      continue; // holes in the id space
    }
    if (n > max) max = n;
  }
  const perTokenizer = maxTokenBytesCache.get(tokenizer) ?? new Map<boolean, number>();
  perTokenizer.set(ordinaryOnly, max);
  maxTokenBytesCache.set(tokenizer, perTokenizer);
  return max;
}

/**
 * Refuses a conversation whose text alone cannot fit the context window, before it is rendered and tokenized: every
 * template prints each message's content and tool-call arguments, and no token stands for more than
 * `maxTokenBytes` bytes, so `bytes / maxTokenBytes` tokens is a lower bound on the prompt. With a guarded renderer
 * (guarded-renderer.ts) request text never becomes special tokens, so the longest *ordinary* token bounds it: one byte
 * per token for the byte tokenizer instead of the 13 of `<|endoftext|>`. (A 60 MiB body used to be
 * tokenized whole — 63 M tokens, 11 s of a blocked event loop — only to be refused afterwards.)
 */
export function checkContextEstimate(conversation: Conversation, tokenizer: Tokenizer, window: number, textIsGuarded = false): void {
  const perToken = maxTokenBytes(tokenizer, textIsGuarded);
  if (perToken === null) return;
  let bytes = 0;
  for (const m of conversation.messages) {
    bytes += Buffer.byteLength(m.content, "utf8");
    for (const c of m.toolCalls ?? []) bytes += Buffer.byteLength(c.arguments, "utf8");
  }
  const atLeast = Math.ceil(bytes / perToken);
  if (atLeast >= window) {
    throw new UserError("context_length_exceeded", `the prompt is at least ${atLeast} tokens (${bytes} bytes of text); the model's context window is ${window} tokens`, {
      details: { param: "messages" },
    });
  }
}

/**
 * Hosted tools the harness offered (Codex's default `tool_search`, Anthropic server tools) are left out of the policy's
 * prompt and recorded, so a real CLI with its default configuration keeps working; each kind is said once in the log.
 * Strict mode refuses them instead.
 */
export function checkOmittedTools(ctx: Pick<ProxyContext, "strictTools" | "reportedOmissions" | "onWarning">, omitted: readonly string[]): void {
  if (omitted.length === 0) return;
  if (ctx.strictTools) {
    throw new HarnessError("unsupported_content", `tools: ${omitted.join(", ")} cannot be served by the policy (hosted tools); the proxy runs with --strict-tools`, {
      details: { param: "tools" },
    });
  }
  for (const t of omitted) {
    const kind = t.split(":")[0] ?? t;
    if (ctx.reportedOmissions.has(kind)) continue;
    ctx.reportedOmissions.add(kind);
    ctx.onWarning(`tool type "${kind}" is hosted by the provider and cannot be served by the policy: left out of prompts (recorded as omittedTools on each call)`);
  }
}
