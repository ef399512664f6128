import type { IncomingMessage, ServerResponse } from "node:http";
import type { ProxyContext } from "./context.js";
import { readJsonBody } from "./http/body.js";
import { sendJson } from "./http/respond.js";
import { parseAnthropicRequest } from "./protocols/anthropic/request.js";
import { checkArgumentDepth } from "./request-bounds.js";

/** `POST /v1/messages/count_tokens`: the rendered prompt's token count under the policy's template and tokenizer. */
export async function countTokens(ctx: ProxyContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  ctx.sessions.authenticate(req.headers);
  const parsed = parseAnthropicRequest(await readJsonBody(req, ctx.maxBodyBytes, ctx.bodyBudget));
  ctx.models.check(parsed.model);
  checkArgumentDepth(parsed.conversation);
  const { tokenizer, renderer } = ctx.engine;
  const text = renderer.render(parsed.conversation.messages, parsed.conversation.tools, { addGenerationPrompt: true });
  sendJson(res, 200, { input_tokens: tokenizer.encode(text).length });
}
