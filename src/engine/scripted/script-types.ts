import { z } from "zod";
import type { ChatMessage, Role, ToolSpec } from "../../chat/types.js";
import type { GenerateContext } from "../types.js";

/** What a script sees: the normalised request, with tool-call arguments parsed (raw text when not JSON). */
export interface ScriptRequest {
  sessionId: string;
  callId: string;
  rolloutId?: string;
  harness?: string;
  messages: ScriptMessage[];
  tools: ToolSpec[];
}

export interface ScriptMessage {
  role: Role;
  content: string;
  reasoning?: string;
  toolCalls?: { id: string; name: string; arguments: unknown }[];
  toolCallId?: string;
  name?: string;
}

export const scriptReplySchema = z
  .object({
    content: z.string().nullish(),
    reasoning: z.string().nullish(),
    toolCalls: z
      .array(z.object({ name: z.string().min(1), arguments: z.record(z.string(), z.unknown()).default({}) }).strict())
      .nullish(),
  })
  .strict();

/** What a script returns: the assistant turn. */
export type ScriptReply = z.input<typeof scriptReplySchema>;

/** A script: the default export of a `scripted:` module, or a function given to `createScriptedEngine`. */
export type ScriptFunction = (request: ScriptRequest) => ScriptReply | Promise<ScriptReply>;

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function toScriptMessage(m: ChatMessage): ScriptMessage {
  const out: ScriptMessage = { role: m.role, content: m.content };
  if (m.reasoning !== undefined) out.reasoning = m.reasoning;
  if (m.toolCalls) out.toolCalls = m.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: parseArguments(c.arguments) }));
  if (m.toolCallId !== undefined) out.toolCallId = m.toolCallId;
  if (m.name !== undefined) out.name = m.name;
  return out;
}

export function toScriptRequest(ctx: GenerateContext): ScriptRequest {
  const req: ScriptRequest = {
    sessionId: ctx.sessionId,
    callId: ctx.callId,
    messages: ctx.messages.map(toScriptMessage),
    tools: ctx.tools.map((t) => ({ ...t })),
  };
  if (ctx.rolloutId !== undefined) req.rolloutId = ctx.rolloutId;
  if (ctx.harness !== undefined) req.harness = ctx.harness;
  return req;
}
