import { Template } from "@huggingface/jinja";
import { UserError, errorMessage } from "../core/errors.js";
import { toHfMessage, toHfTool } from "./hf-messages.js";
import { installPythonStringMethods } from "./jinja-python-strings.js";
import type { ChatRenderer } from "./renderer.js";
import type { ChatMessage, ToolSpec } from "./types.js";

export interface JinjaRendererOptions {
  bosToken?: string;
  eosToken?: string;
  /** Text that closes an assistant turn; default `<|im_end|>` when the template uses it, else the EOS token. */
  endOfTurn?: string;
  /** Extra template variables, e.g. `{ enable_thinking: false }` for Qwen3 templates. */
  variables?: Record<string, unknown>;
}

/** Renders conversations with a Hugging Face–style Jinja chat template, parsed once. */
export class JinjaChatRenderer implements ChatRenderer {
  readonly endOfTurn: string;
  private readonly template: Template;
  private readonly bosToken: string;
  private readonly eosToken: string;
  private readonly variables: Record<string, unknown>;

  constructor(source: string, options: JinjaRendererOptions = {}) {
    installPythonStringMethods();
    try {
      this.template = new Template(source);
    } catch (e) {
      throw new UserError("invalid_chat_template", `chat template does not parse: ${errorMessage(e)}`, { cause: e });
    }
    this.bosToken = options.bosToken ?? "";
    this.eosToken = options.eosToken ?? "";
    this.variables = options.variables ?? {};
    const eot = options.endOfTurn ?? (source.includes("<|im_end|>") ? "<|im_end|>" : this.eosToken);
    if (!eot) throw new UserError("invalid_chat_template", "cannot tell how this chat template ends an assistant turn: give endOfTurn or an eos_token");
    this.endOfTurn = eot;
  }

  render(messages: readonly ChatMessage[], tools: readonly ToolSpec[], options: { addGenerationPrompt: boolean }): string {
    const context: Record<string, unknown> = {
      ...this.variables,
      messages: messages.map(toHfMessage),
      add_generation_prompt: options.addGenerationPrompt,
      bos_token: this.bosToken,
      eos_token: this.eosToken,
    };
    // Like `apply_chat_template`, pass `tools=None` when there are none (templates test `tools is not none`).
    context.tools = tools.length > 0 ? tools.map(toHfTool) : null;
    try {
      return this.template.render(context);
    } catch (e) {
      throw new UserError("chat_template_rejected", `the chat template rejected the conversation: ${errorMessage(e)}`, { cause: e });
    }
  }
}
