import { hasPrefix } from "../core/strings.js";
import { UserError } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { ChatMLToolsRenderer } from "./chatml-renderer.js";
import type { Codec } from "./codec.js";
import { SpecialTextGuard } from "./guarded-renderer.js";
import type { AssistantTurn, ChatMessage, ToolSpec } from "./types.js";

export interface RenderedTurn {
  /** The completion text a model would have sampled: from after the generation prompt through the end-of-turn token. */
  text: string;
  tokens: number[];
}

/** The turn as a normalised assistant message (call ids are placeholders: templates in the Hermes style ignore them). */
export function assistantMessageFromTurn(turn: AssistantTurn): ChatMessage {
  const msg: ChatMessage = { role: "assistant", content: turn.content ?? "" };
  if (turn.reasoning !== undefined) msg.reasoning = turn.reasoning;
  if (turn.toolCalls && turn.toolCalls.length > 0) {
    msg.toolCalls = turn.toolCalls.map((c) => ({ id: newId("call"), name: c.name, arguments: JSON.stringify(c.arguments) }));
  }
  return msg;
}

/**
 * Renders an assistant turn exactly as the chat template would place it after the generation prompt, up to and
 * including the end-of-turn text: what a model following the template would have sampled. Used by the scripted engine
 * and by tests; `parseAssistantOutput(text)` gives the turn back.
 */
export function renderAssistantTurn(codec: Codec, messages: readonly ChatMessage[], tools: readonly ToolSpec[], turn: AssistantTurn): RenderedTurn {
  const { tokenizer } = codec;
  // The turn is the model's own output, which may contain special tokens (a stop token, tool-call tags): render it
  // without the guard that keeps request text from becoming control tokens (only the turn's text is used).
  const renderer = codec.renderer instanceof SpecialTextGuard ? codec.renderer.inner : codec.renderer;
  if (renderer instanceof ChatMLToolsRenderer) {
    const text = renderer.renderTurnCompletion(assistantMessageFromTurn(turn));
    return { text, tokens: tokenizer.encode(text) };
  }
  const prompt = renderer.render(messages, tools, { addGenerationPrompt: true });
  const full = renderer.render([...messages, assistantMessageFromTurn(turn)], tools, { addGenerationPrompt: false });
  if (!hasPrefix(full, prompt)) {
    throw new UserError(
      "chat_template_rejected",
      "the chat template does not render an assistant turn as a continuation of its generation prompt, so a sampled turn cannot be reconstructed",
    );
  }
  const rest = full.slice(prompt.length);
  const eot = rest.lastIndexOf(renderer.endOfTurn);
  if (eot < 0) throw new UserError("chat_template_rejected", `the chat template did not close the assistant turn with ${JSON.stringify(renderer.endOfTurn)}`);
  const text = rest.slice(0, eot + renderer.endOfTurn.length);
  return { text, tokens: tokenizer.encode(text) };
}
