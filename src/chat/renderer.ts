import type { ChatMessage, ToolSpec } from "./types.js";

/** Renders a normalised conversation to prompt text with a model's chat template (Jinja). */
export interface ChatRenderer {
  /** Text that closes an assistant turn in this template (e.g. `<|im_end|>`), used to splice sampled turns. */
  readonly endOfTurn: string;
  render(messages: readonly ChatMessage[], tools: readonly ToolSpec[], options: { addGenerationPrompt: boolean }): string;
}
