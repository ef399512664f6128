import { newId } from "../../../core/ids.js";
import type { SseWriter } from "../../http/sse.js";
import type { ProtocolAdapter, Reply } from "../protocol.js";
import { parseAnthropicRequest, type AnthropicRequest } from "./request.js";
import { buildMessage, echoAnthropicMessage } from "./response.js";
import { AnthropicStream } from "./stream.js";

export const anthropicMessages: ProtocolAdapter<AnthropicRequest> = {
  protocol: "anthropic-messages",
  parse: parseAnthropicRequest,
  newResponseId: () => newId("msg", 24),
  newToolCallId: () => newId("toolu", 24),
  buildResponse: (_req: AnthropicRequest, reply: Reply) => buildMessage(reply),
  echoMessage: (_req: AnthropicRequest, reply: Reply) => echoAnthropicMessage(reply),
  openStream: (_req: AnthropicRequest, reply: Reply, sse: SseWriter) => new AnthropicStream(reply, sse),
};
