import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseChatMLPrompt } from "../../src/chat/chatml-prompt.js";
import { defaultCodec, defaultJinjaRenderer } from "../../src/chat/codec.js";
import { JinjaChatRenderer } from "../../src/chat/jinja-renderer.js";
import { parseAssistantOutput } from "../../src/chat/parse-output.js";
import { renderAssistantTurn } from "../../src/chat/render-turn.js";
import type { AssistantTurn, ChatMessage } from "../../src/chat/types.js";
import { UserError } from "../../src/core/errors.js";
import { ByteTokenizer } from "../../src/tokenizer/bytes.js";
import { pick, randomArgs, randomConversation, randomText, randomTools, rng } from "./conversations.js";

const history: ChatMessage[] = [{ role: "system", content: "sys" }, { role: "user", content: "do it" }];

function randomTurn(r: () => number): AssistantTurn {
  const turn: AssistantTurn = {};
  if (r() < 0.7) turn.content = randomText(r).trim();
  if (r() < 0.3) turn.reasoning = randomText(r).trim();
  const n = Math.floor(r() * 3);
  if (n > 0) turn.toolCalls = Array.from({ length: n }, () => ({ name: pick(r, ["bash", "read", "é"]), arguments: randomArgs(r) }));
  return turn;
}

describe("renderAssistantTurn", () => {
  const codec = defaultCodec();

  it("renders the completion after the generation prompt through <|im_end|>, tokenized", () => {
    const turn: AssistantTurn = { content: "Sure.", toolCalls: [{ name: "bash", arguments: { cmd: "ls" } }] };
    const r = renderAssistantTurn(codec, history, [], turn);
    expect(r.text).toBe('Sure.\n<tool_call>\n{"name": "bash", "arguments": {"cmd": "ls"}}\n</tool_call><|im_end|>');
    expect(r.tokens).toEqual(codec.tokenizer.encode(r.text));
    expect(r.tokens.at(-1)).toBe(258);
    expect(r.tokens.filter((t) => t === 259 || t === 260)).toEqual([259, 260]);
    // Prompt + completion is exactly the rendering of the conversation with the turn appended (minus the trailing "\n").
    const prompt = codec.renderer.render(history, [], { addGenerationPrompt: true });
    const full = codec.renderer.render([...history, { role: "assistant", content: "Sure.", toolCalls: [{ id: "x", name: "bash", arguments: '{"cmd":"ls"}' }] }], [], { addGenerationPrompt: false });
    expect(prompt + r.text + "\n").toBe(full);
  });

  it("round-trips through parseAssistantOutput for 300 random turns and histories", () => {
    const r = rng(5);
    for (let i = 0; i < 300; i++) {
      const msgs = randomConversation(r).filter((m, k, all) => !(k === all.length - 1 && m.role === "assistant"));
      const turn = randomTurn(r);
      const out = renderAssistantTurn(codec, msgs, randomTools(r), turn);
      const p = parseAssistantOutput(out.text);
      expect(p.malformed).toEqual([]);
      expect(p.content).toBe(turn.content ?? "");
      expect(p.reasoning).toBe(turn.reasoning ? turn.reasoning : undefined);
      expect(p.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments }))).toEqual(turn.toolCalls ?? []);
      expect(codec.tokenizer.decode(out.tokens)).toBe(out.text);
    }
  });

  it("takes the default template's shortcut only where it matches rendering the whole conversation (checked against Jinja)", () => {
    const viaJinja = { tokenizer: codec.tokenizer, renderer: defaultJinjaRenderer() };
    const r = rng(6);
    for (let i = 0; i < 200; i++) {
      const msgs = randomConversation(r).filter((m, k, all) => !(k === all.length - 1 && m.role === "assistant"));
      const tools = randomTools(r);
      const turn = randomTurn(r);
      expect(renderAssistantTurn(codec, msgs, tools, turn)).toEqual(renderAssistantTurn(viaJinja, msgs, tools, turn));
    }
  });

  it("works with a model's own Jinja template and its end-of-turn text", () => {
    const tpl = readFileSync(join(import.meta.dirname, "fixtures", "reasoning-style.jinja"), "utf8");
    const own = { tokenizer: new ByteTokenizer(), renderer: new JinjaChatRenderer(tpl) };
    const out = renderAssistantTurn(own, history, [], { content: "done", reasoning: "think", toolCalls: [{ name: "f", arguments: { a: [1] } }] });
    expect(out.text).toBe('<think>\nthink\n</think>\n\ndone\n<tool_call>\n{"name": "f", "arguments": {"a": [1]}}\n</tool_call><|im_end|>');
    const p = parseAssistantOutput(out.text);
    expect(p).toMatchObject({ content: "done", reasoning: "think", toolCalls: [{ name: "f", arguments: { a: [1] } }] });
  });

  it("leaves a think block pre-filled by the generation prompt (enable_thinking=false) in the prompt", () => {
    const tpl = readFileSync(join(import.meta.dirname, "fixtures", "reasoning-style.jinja"), "utf8");
    const noThink = { tokenizer: new ByteTokenizer(), renderer: new JinjaChatRenderer(tpl, { variables: { enable_thinking: false } }) };
    expect(renderAssistantTurn(noThink, [{ role: "user", content: "q" }], [], { content: "a" }).text).toBe("a<|im_end|>");
  });

  it("refuses a template whose generation prompt is not a prefix of the rendered turn", () => {
    const tpl = "{% for m in messages %}<{{ m.role }}>{{ m.content }}<|im_end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
    const odd = { tokenizer: new ByteTokenizer(), renderer: new JinjaChatRenderer(tpl) };
    expect(() => renderAssistantTurn(odd, [{ role: "user", content: "q" }], [], { content: "a" })).toThrow(UserError);
    expect(() => renderAssistantTurn(odd, [{ role: "user", content: "q" }], [], { content: "a" })).toThrow(/continuation of its generation prompt/);
  });
});

describe("parseChatMLPrompt (inverse of the default template)", () => {
  it("recovers a conversation whose re-rendering is identical, for 300 random conversations", () => {
    const jinja = defaultJinjaRenderer();
    const r = rng(9);
    for (let i = 0; i < 300; i++) {
      const msgs = randomConversation(r);
      const tools = randomTools(r);
      const text = jinja.render(msgs, tools, { addGenerationPrompt: true });
      const back = parseChatMLPrompt(text);
      expect(jinja.render(back.messages, back.tools, { addGenerationPrompt: true })).toBe(text);
      expect(back.tools.map((t) => t.name)).toEqual(tools.map((t) => t.name));
    }
  });

  it("links tool results to the calls of the preceding assistant turn", () => {
    const msgs: ChatMessage[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: "", toolCalls: [{ id: "a", name: "f", arguments: "{}" }, { id: "b", name: "g", arguments: '{"x": 1}' }] },
      { role: "tool", content: "ra", toolCallId: "a" },
      { role: "tool", content: "rb", toolCallId: "b" },
    ];
    const back = parseChatMLPrompt(defaultCodec().renderer.render(msgs, [], { addGenerationPrompt: true }));
    const calls = back.messages[1]?.toolCalls ?? [];
    expect(calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([["f", {}], ["g", { x: 1 }]]);
    expect(back.messages.slice(2).map((m) => [m.role, m.content, m.toolCallId])).toEqual([
      ["tool", "ra", calls[0]?.id],
      ["tool", "rb", calls[1]?.id],
    ]);
  });
});
