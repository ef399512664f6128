/**
 * The normalised conversation every protocol (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) is
 * converted into before rendering. It is also what scripted engines see and what records store.
 */
export type Role = "system" | "user" | "assistant" | "tool";

export interface ToolCall {
  /** Call id as the harness sees it (proxy-generated for calls the policy made). */
  id: string;
  name: string;
  /** Arguments as JSON text, exactly as sent to / received from the harness. */
  arguments: string;
}

export interface ChatMessage {
  role: Role;
  /** Text content (content blocks are joined; non-text content is rejected at the protocol boundary). */
  content: string;
  /** Assistant reasoning that the harness sent back separately (e.g. Anthropic thinking blocks), if any. */
  reasoning?: string;
  toolCalls?: ToolCall[];
  /** For role "tool": the id of the call this message answers. */
  toolCallId?: string;
  /** For role "tool": the tool's name when the protocol says it. */
  name?: string;
}

export interface ToolSpec {
  name: string;
  description?: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
}

/** An assistant turn as a model (or a scripted engine) produces it, before ids are assigned. */
export interface AssistantTurn {
  content?: string;
  reasoning?: string;
  toolCalls?: { name: string; arguments: Record<string, unknown> }[];
}

/** How the harness constrained tool use; rendered templates may ignore it, parsers may enforce it. */
export type ToolChoice = "auto" | "none" | "required" | { name: string };

export interface Conversation {
  messages: ChatMessage[];
  tools: ToolSpec[];
  toolChoice?: ToolChoice;
}
