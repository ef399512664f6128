import type { ParsedAssistantOutput } from "../../chat/parse-output.js";
import type { GenerateResult } from "../../engine/types.js";
import type { ProtocolStream, Reply } from "../protocols/protocol.js";
import type { OutputSplitter } from "./splitter.js";

/**
 * Fills the protocol-neutral reply from the parsed completion. Malformed tool-call blocks are handed back as text,
 * so the harness (and the policy, next turn) sees what was sampled, as a real endpoint would show an unparsable call.
 */
export function buildReply(reply: Reply, output: ParsedAssistantOutput, result: GenerateResult, newToolCallId: () => string): void {
  const pieces = output.content === "" ? [] : [output.content];
  for (const m of output.malformed) pieces.push(m.text);
  reply.content = pieces.join("\n");
  reply.reasoning = output.reasoning ?? "";
  reply.toolCalls = output.toolCalls.map((c) => ({ id: newToolCallId(), name: c.name, arguments: c.argumentsText, input: c.arguments }));
  reply.stopReason = reply.toolCalls.length > 0 ? "tool_calls" : result.finishReason === "length" ? "length" : "stop";
  reply.usage.outputTokens = result.tokens.length;
}

/**
 * Completes a stream whose content went out token by token: emits what the final parse has beyond what was already
 * streamed. Where the two disagree (a template quirk the splitter could not foresee), the reply is made to say what
 * the harness actually received, since that is what it will send back as history.
 */
export function reconcileStreamed(reply: Reply, splitter: OutputSplitter, stream: ProtocolStream): void {
  const streamed = splitter.streamedContent;
  if (splitter.streamedReasoning !== null) reply.reasoning = splitter.streamedReasoning;
  // Reasoning the splitter did not see (a `</think>` with no `<think>` before it) already went out as content; sent
  // again after that content it would also come after it in the stream, out of the order every protocol's final
  // answer lists its parts in.
  else if (streamed !== "") reply.reasoning = "";
  else if (reply.reasoning !== "") stream.reasoning(reply.reasoning);
  if (reply.content.startsWith(streamed)) {
    const rest = reply.content.slice(streamed.length);
    if (rest !== "") stream.content(rest);
  } else {
    reply.content = streamed;
  }
}
