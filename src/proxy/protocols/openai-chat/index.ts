import { newId } from "../../../core/ids.js";
import type { SseWriter } from "../../http/sse.js";
import type { ProtocolAdapter, Reply } from "../protocol.js";
import { parseChatRequest, type ChatRequest } from "./request.js";
import { buildChatCompletion, echoChatMessage } from "./response.js";
import { ChatStream } from "./stream.js";

export const openaiChat: ProtocolAdapter<ChatRequest> = {
  protocol: "openai-chat",
  parse: parseChatRequest,
  newResponseId: () => newId("chatcmpl", 24).replace("_", "-"),
  newToolCallId: () => newId("call", 24),
  buildResponse: (_req: ChatRequest, reply: Reply) => buildChatCompletion(reply),
  echoMessage: (_req: ChatRequest, reply: Reply) => echoChatMessage(reply),
  openStream: (req: ChatRequest, reply: Reply, sse: SseWriter) => new ChatStream(reply, req.includeUsage, sse),
};
