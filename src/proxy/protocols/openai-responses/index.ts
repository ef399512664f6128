import { newId } from "../../../core/ids.js";
import type { SseWriter } from "../../http/sse.js";
import type { ProtocolAdapter, Reply } from "../protocol.js";
import { parseResponsesRequest, type ResponsesRequest } from "./request.js";
import { echoResponsesMessage, responseObject } from "./response.js";
import { ResponsesStream } from "./stream.js";

export const openaiResponses: ProtocolAdapter<ResponsesRequest> = {
  protocol: "openai-responses",
  parse: parseResponsesRequest,
  newResponseId: () => newId("resp", 24),
  newToolCallId: () => newId("call", 24),
  buildResponse: (req: ResponsesRequest, reply: Reply) => responseObject(req, reply, true),
  echoMessage: echoResponsesMessage,
  openStream: (req: ResponsesRequest, reply: Reply, sse: SseWriter) => new ResponsesStream(req, reply, sse),
};
