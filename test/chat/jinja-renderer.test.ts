import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { SpecialTextGuard } from "../../src/chat/guarded-renderer.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ChatMLToolsRenderer } from "../../src/chat/chatml-renderer.js";
import { DEFAULT_TEMPLATE_PATH, defaultCodec, defaultJinjaRenderer, loadCodec } from "../../src/chat/codec.js";
import { JinjaChatRenderer } from "../../src/chat/jinja-renderer.js";
import type { ChatMessage, ToolSpec } from "../../src/chat/types.js";
import { UserError } from "../../src/core/errors.js";
import { ByteTokenizer } from "../../src/tokenizer/bytes.js";
import { writeRandomModelDir } from "../../src/weights/random-model.js";
import { randomConversation, randomTools, rng } from "./conversations.js";

const fixture = (name: string): string => readFileSync(join(import.meta.dirname, "fixtures", name), "utf8");

const bashTool: ToolSpec = { name: "bash", description: "Run a command", parameters: { type: "object", properties: { cmd: { type: "string" } } } };

const agentTurns: ChatMessage[] = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "List files" },
  { role: "assistant", content: "Sure.", toolCalls: [{ id: "c1", name: "bash", arguments: '{"cmd": "ls"}' }, { id: "c2", name: "bash", arguments: '{"cmd":"pwd"}' }] },
  { role: "tool", content: "a.txt", toolCallId: "c1" },
  { role: "tool", content: "/w", toolCallId: "c2" },
];

describe("default template (templates/chatml-tools.jinja)", () => {
  const jinja = defaultJinjaRenderer();

  it("renders system + tools, parallel Hermes calls and grouped tool responses", () => {
    const text = jinja.render(agentTurns, [bashTool], { addGenerationPrompt: true });
    expect(text).toBe(
      "<|im_start|>system\nBe brief.\n\n# Tools\nFunctions you may call:\n<tools>\n" +
        '{"name": "bash", "description": "Run a command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}\n' +
        '</tools>\nTo call one, write:\n<tool_call>\n{"name": <name>, "arguments": <JSON object>}\n</tool_call><|im_end|>\n' +
        "<|im_start|>user\nList files<|im_end|>\n" +
        '<|im_start|>assistant\nSure.\n<tool_call>\n{"name": "bash", "arguments": {"cmd": "ls"}}\n</tool_call>\n' +
        '<tool_call>\n{"name": "bash", "arguments": {"cmd": "pwd"}}\n</tool_call><|im_end|>\n' +
        "<|im_start|>user\n<tool_response>\na.txt\n</tool_response>\n<tool_response>\n/w\n</tool_response><|im_end|>\n" +
        "<|im_start|>assistant\n",
    );
  });

  it("renders a bare chat without a system turn, and reasoning in <think>", () => {
    const msgs: ChatMessage[] = [
      { role: "user", content: "hi" },
      { role: "assistant", content: " hello ", reasoning: "\nsay hi\n" },
    ];
    expect(jinja.render(msgs, [], { addGenerationPrompt: false })).toBe(
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\nsay hi\n</think>\n\nhello<|im_end|>\n",
    );
  });

  it("writes non-JSON arguments as a JSON string so the block stays valid JSON", () => {
    const msgs: ChatMessage[] = [{ role: "assistant", content: "", toolCalls: [{ id: "x", name: "f", arguments: "not json" }] }];
    expect(jinja.render(msgs, [], { addGenerationPrompt: false })).toBe('<|im_start|>assistant\n<tool_call>\n{"name": "f", "arguments": "not json"}\n</tool_call><|im_end|>\n');
  });

  it("rejects unknown roles through raise_exception as a UserError", () => {
    const bad = [{ role: "developer", content: "x" }] as unknown as ChatMessage[];
    expect(() => jinja.render(bad, [], { addGenerationPrompt: true })).toThrow(/unsupported message role: developer/);
    expect(() => new ChatMLToolsRenderer().render(bad, [], { addGenerationPrompt: true })).toThrow(/unsupported message role: developer/);
  });

  it("is rendered identically by the fast hand-written renderer on 600 random conversations", () => {
    const fast = new ChatMLToolsRenderer();
    const r = rng(42);
    for (let i = 0; i < 600; i++) {
      const msgs = randomConversation(r);
      const tools = randomTools(r);
      const gen = r() < 0.5;
      expect(fast.render(msgs, tools, { addGenerationPrompt: gen })).toBe(jinja.render(msgs, tools, { addGenerationPrompt: gen }));
    }
  });

  it("defaultCodec is built once and pairs the byte tokenizer with <|im_end|> turns", () => {
    const a = defaultCodec();
    expect(defaultCodec()).toBe(a);
    expect(a.tokenizer).toBeInstanceOf(ByteTokenizer);
    expect(a.renderer.endOfTurn).toBe("<|im_end|>");
  });
});

describe("JinjaChatRenderer with real-model-style templates", () => {
  it("renders a Qwen2.5-style template: namespace(), loop vars, tojson, `is string`, tools is not none", () => {
    const r = new JinjaChatRenderer(fixture("hermes-style.jinja"), { eosToken: "<|endoftext|>" });
    expect(r.endOfTurn).toBe("<|im_end|>");
    const msgs: ChatMessage[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: "", toolCalls: [{ id: "1", name: "bash", arguments: '{"cmd": "ls"}' }, { id: "2", name: "raw", arguments: "oops" }] },
      { role: "tool", content: "ok", toolCallId: "1" },
      { role: "tool", content: "err", toolCallId: "2" },
      { role: "assistant", content: "done" },
    ];
    expect(r.render(msgs, [bashTool], { addGenerationPrompt: true })).toBe(
      "<|im_start|>system\nDefault system.\n\nTools:\n" +
        '{"type": "function", "function": {"name": "bash", "description": "Run a command", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}<|im_end|>\n' +
        "<|im_start|>user\ngo<|im_end|>\n" +
        '<|im_start|>assistant\n<tool_call>\n{"name": "bash", "arguments": {"cmd": "ls"}}\n</tool_call>\n<tool_call>\n{"name": "raw", "arguments": oops}\n</tool_call><|im_end|>\n' +
        "<|im_start|>user\n<tool_response>\nok\n</tool_response>\n<tool_response>\nerr\n</tool_response><|im_end|>\n" +
        "<|im_start|>assistant\ndone<|im_end|>\n<|im_start|>assistant\n",
    );
    expect(r.render([{ role: "user", content: "x" }], [], { addGenerationPrompt: false })).toBe("<|im_start|>system\nDefault system.<|im_end|>\n<|im_start|>user\nx<|im_end|>\n");
  });

  it("surfaces the template's raise_exception message as a UserError", () => {
    const r = new JinjaChatRenderer(fixture("hermes-style.jinja"));
    const msgs: ChatMessage[] = [{ role: "user", content: "a" }, { role: "system", content: "late" }];
    let err: unknown;
    try {
      r.render(msgs, [], { addGenerationPrompt: true });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).code).toBe("chat_template_rejected");
    expect((err as UserError).message).toContain("only the first message may be a system message");
  });

  it("renders a Qwen3-style template: strips reasoning before the last user query, splits inline <think>, honours enable_thinking", () => {
    const src = fixture("reasoning-style.jinja");
    const msgs: ChatMessage[] = [
      { role: "user", content: "q1" },
      { role: "assistant", content: "<think>\nold thought\n</think>\n\nanswer1" },
      { role: "user", content: "q2" },
      { role: "assistant", content: "calling", reasoning: "new thought", toolCalls: [{ id: "a", name: "f", arguments: '{"x": 1}' }] },
      { role: "tool", content: "r", toolCallId: "a" },
      { role: "assistant", content: "final", reasoning: "\nwrap up\n" },
    ];
    const text = new JinjaChatRenderer(src).render(msgs, [], { addGenerationPrompt: false });
    expect(text).toBe(
      "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\nanswer1<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n" +
        '<|im_start|>assistant\n<think>\nnew thought\n</think>\n\ncalling\n<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call><|im_end|>\n' +
        "<|im_start|>user\n<tool_response>\nr\n</tool_response><|im_end|>\n" +
        "<|im_start|>assistant\n<think>\nwrap up\n</think>\n\nfinal<|im_end|>\n",
    );
    const noThink = new JinjaChatRenderer(src, { variables: { enable_thinking: false } });
    expect(noThink.render([{ role: "user", content: "q" }], [], { addGenerationPrompt: true })).toBe("<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    expect(() => new JinjaChatRenderer(src).render([{ role: "tool2", content: "" }] as unknown as ChatMessage[], [], { addGenerationPrompt: false })).toThrow(/unknown role tool2/);
  });

  it("passes bos_token and eos_token, and falls back to eos as the end of turn", () => {
    const r = new JinjaChatRenderer("{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}", { bosToken: "<s>", eosToken: "</s>" });
    expect(r.endOfTurn).toBe("</s>");
    expect(r.render([{ role: "user", content: "a" }], [], { addGenerationPrompt: false })).toBe("<s>[user]a</s>");
  });

  it("rejects a template that does not parse, and one whose end of turn cannot be known", () => {
    expect(() => new JinjaChatRenderer("{% for m in messages %}")).toThrow(UserError);
    expect(() => new JinjaChatRenderer("{{ messages }}")).toThrow(/end of turn|endOfTurn/);
  });
});

describe("loadCodec(modelDir)", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-codec-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  function modelDir(files: Record<string, unknown>): string {
    const dir = mkdtempSync(join(root, "m-"));
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), typeof content === "string" ? content : JSON.stringify(content));
    return dir;
  }

  it("loads a tiny model dir (byte tokenizer + default template) with the fast renderer", () => {
    const dir = modelDir({
      "tokenizer_config.json": { chat_template: readFileSync(DEFAULT_TEMPLATE_PATH, "utf8"), eos_token: "<|im_end|>", harnessrl_tokenizer: "bytes" },
      "tokenizer.json": { harnessrl: { type: "bytes", special_tokens: ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"] } },
    });
    const codec = loadCodec(dir);
    expect(codec.tokenizer).toBeInstanceOf(ByteTokenizer);
    expect(codec.renderer).toBeInstanceOf(SpecialTextGuard);
    expect((codec.renderer as SpecialTextGuard).inner).toBeInstanceOf(ChatMLToolsRenderer);
  });

  it("loads a model dir written by the weights code (random tiny model) with the byte tokenizer and fast renderer", () => {
    const dir = join(root, "random-model");
    writeRandomModelDir(dir, { modelType: "qwen3", hiddenSize: 16, numLayers: 1, numHeads: 2, numKvHeads: 1, intermediateSize: 32, seed: 3 });
    const codec = loadCodec(dir);
    expect(codec.tokenizer).toBeInstanceOf(ByteTokenizer);
    expect(codec.renderer).toBeInstanceOf(SpecialTextGuard);
    expect((codec.renderer as SpecialTextGuard).inner).toBeInstanceOf(ChatMLToolsRenderer);
    expect([...codec.tokenizer.stopTokenIds].sort()).toEqual([256, 258]);
  });

  it("uses a model's own template through Jinja, from tokenizer_config.json or chat_template.jinja", () => {
    const a = loadCodec(modelDir({ "tokenizer_config.json": { chat_template: [{ name: "default", template: fixture("hermes-style.jinja") }], eos_token: { content: "<|im_end|>" }, harnessrl_tokenizer: "bytes" } }));
    expect((a.renderer as SpecialTextGuard).inner).toBeInstanceOf(JinjaChatRenderer);
    expect(a.renderer.render([{ role: "user", content: "x" }], [], { addGenerationPrompt: true })).toContain("Default system.");
    const b = loadCodec(modelDir({ "tokenizer_config.json": { harnessrl_tokenizer: "bytes" }, "chat_template.jinja": fixture("reasoning-style.jinja") }));
    expect(b.renderer.render([{ role: "user", content: "x" }], [], { addGenerationPrompt: true })).toBe("<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
    const c = loadCodec(modelDir({ "tokenizer_config.json": { harnessrl_tokenizer: "bytes" }, "chat_template.json": { chat_template: "{% for m in messages %}{{ m.content }}<|im_end|>{% endfor %}" } }));
    expect(c.renderer.render([{ role: "user", content: "x" }], [], { addGenerationPrompt: false })).toBe("x<|im_end|>");
  });

  it("says what is missing for a broken model dir", () => {
    expect(() => loadCodec(join(tmpdir(), "definitely-not-here-hrl"))).toThrow(/does not exist/);
    expect(() => loadCodec(modelDir({ "tokenizer_config.json": { harnessrl_tokenizer: "bytes" } }))).toThrow(/no chat template/);
    expect(() => loadCodec(modelDir({ "tokenizer_config.json": "{not json" }))).toThrow(/cannot read tokenizer config/);
    expect(() => loadCodec(modelDir({ "tokenizer_config.json": { chat_template: 5 } }))).toThrow(/chat_template/);
  });
});

describe("Python string semantics in templates", () => {
  it("strip/lstrip/rstrip honour a chars argument like Python (the library alone trims all whitespace)", () => {
    const r = new JinjaChatRenderer(
      "{% for m in messages %}[{{ m.content.strip('\\n') }}|{{ m.content.lstrip('\\n') }}|{{ m.content.rstrip('\\n ') }}|{{ m.content.strip() }}|{{ m.content.strip('x\\n') }}]{% endfor %}",
      { endOfTurn: "]" },
    );
    expect(r.render([{ role: "user", content: "\n  a b \n" }], [], { addGenerationPrompt: false })).toBe("[  a b |  a b \n|\n  a b|a b|  a b ]");
    expect(r.render([{ role: "user", content: "xx\nkeep\nxx" }], [], { addGenerationPrompt: false })).toBe("[xx\nkeep\nxx|xx\nkeep\nxx|xx\nkeep\nxx|xx\nkeep\nxx|keep]");
  });

  it("keeps leading spaces of reasoning the way a Qwen3-style template does in Python", () => {
    const r = new JinjaChatRenderer(fixture("reasoning-style.jinja"));
    const text = r.render([{ role: "user", content: "q" }, { role: "assistant", content: "\n  indented answer", reasoning: "\n  indented thought\n" }], [], { addGenerationPrompt: false });
    expect(text).toContain("<think>\n  indented thought\n</think>\n\n  indented answer<|im_end|>");
  });
});
