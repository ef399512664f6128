// The three API protocols the proxy speaks, by route.
import type { ProtocolAdapter } from "./protocol.js";
import { anthropicMessages } from "./anthropic/index.js";
import { openaiChat } from "./openai-chat/index.js";
import { openaiResponses } from "./openai-responses/index.js";

export { anthropicMessages, openaiChat, openaiResponses };
export type { ParsedRequest, ProtocolAdapter, ProtocolStream, Reply } from "./protocol.js";

export const MODEL_CALL_ROUTES: ReadonlyMap<string, ProtocolAdapter> = new Map<string, ProtocolAdapter>([
  ["/v1/chat/completions", openaiChat as ProtocolAdapter],
  ["/v1/responses", openaiResponses as ProtocolAdapter],
  ["/v1/messages", anthropicMessages as ProtocolAdapter],
]);
