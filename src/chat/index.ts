// Public surface of chat rendering and output parsing.
export type { ChatRenderer } from "./renderer.js";
export type { AssistantTurn, ChatMessage, Conversation, Role, ToolCall, ToolChoice, ToolSpec } from "./types.js";
export { DEFAULT_TEMPLATE_PATH, defaultCodec, defaultJinjaRenderer, loadCodec } from "./codec.js";
export { ChatMLToolsRenderer } from "./chatml-renderer.js";
export type { Codec } from "./codec.js";
export { JinjaChatRenderer } from "./jinja-renderer.js";
export type { JinjaRendererOptions } from "./jinja-renderer.js";
export { parseAssistantOutput } from "./parse-output.js";
export type { MalformedToolCall, OutputSpans, ParseOptions, ParsedAssistantOutput, ParsedToolCall, Span, ToolCallSpans } from "./parse-output.js";
export { tokenMask, tokenSpans } from "./token-spans.js";
export { assistantMessageFromTurn, renderAssistantTurn } from "./render-turn.js";
export type { RenderedTurn } from "./render-turn.js";
export { parseChatMLPrompt } from "./chatml-prompt.js";
