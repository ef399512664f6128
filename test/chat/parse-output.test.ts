import { describe, expect, it } from "vitest";
import { rng } from "./conversations.js";
import { parseAssistantOutput } from "../../src/chat/parse-output.js";
import type { ParsedAssistantOutput } from "../../src/chat/parse-output.js";

/** Every span must cut out exactly the value it stands for. */
function expectSpansConsistent(text: string, p: ParsedAssistantOutput): void {
  if (p.reasoning !== undefined && p.spans.reasoning) expect(text.slice(p.spans.reasoning.start, p.spans.reasoning.end)).toBe(p.reasoning);
  expect(p.spans.content.map((s) => text.slice(s.start, s.end)).join("\n")).toBe(p.content);
  expect(p.spans.toolCalls).toHaveLength(p.toolCalls.length);
  p.toolCalls.forEach((call, i) => {
    const s = p.spans.toolCalls[i];
    if (!s) throw new Error("missing span");
    const block = text.slice(s.block.start, s.block.end);
    expect(block.startsWith("<tool_call>")).toBe(true);
    expect(block.endsWith("</tool_call>")).toBe(true);
    expect(JSON.parse(`"${text.slice(s.name.start, s.name.end)}"`)).toBe(call.name);
    if (s.arguments) {
      const argText = text.slice(s.arguments.start, s.arguments.end);
      const v: unknown = JSON.parse(argText);
      expect(typeof v === "string" ? JSON.parse(v) : v).toEqual(call.arguments);
    }
  });
  for (const m of p.malformed) expect(text.slice(m.span.start, m.span.end)).toBe(m.text);
}

function parse(text: string): ParsedAssistantOutput {
  const p = parseAssistantOutput(text);
  expectSpansConsistent(text, p);
  return p;
}

describe("parseAssistantOutput", () => {
  it("returns plain content without the trailing end-of-turn token", () => {
    const p = parse("Hello there.<|im_end|>");
    expect(p).toMatchObject({ content: "Hello there.", toolCalls: [], malformed: [] });
    expect(p.reasoning).toBeUndefined();
    expect(p.spans.endOfTurn).toEqual({ start: 12, end: 22 });
    expect(parse("bye<|endoftext|>").content).toBe("bye");
    expect(parse("no end token").content).toBe("no end token");
  });

  it("only strips the end-of-turn token at the very end", () => {
    expect(parse("a<|im_end|>b").content).toBe("a<|im_end|>b");
  });

  it("parses one Hermes tool call with its spans", () => {
    const text = 'Let me look.\n<tool_call>\n{"name": "bash", "arguments": {"cmd": "ls -la"}}\n</tool_call><|im_end|>';
    const p = parse(text);
    expect(p.content).toBe("Let me look.");
    expect(p.toolCalls).toEqual([{ name: "bash", arguments: { cmd: "ls -la" }, argumentsText: '{"cmd": "ls -la"}' }]);
    const s = p.spans.toolCalls[0];
    expect(s?.block).toEqual({ start: 13, end: text.indexOf("<|im_end|>") });
    expect(text.slice(s?.name.start, s?.name.end)).toBe("bash");
    expect(text.slice(s?.arguments?.start, s?.arguments?.end)).toBe('{"cmd": "ls -la"}');
  });

  it("parses several blocks as parallel calls, keeping content written between them", () => {
    const text = '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\nand\n<tool_call>{"arguments": {"x": [1, {"y": "}"}]}, "name": "b"}</tool_call>';
    const p = parse(text);
    expect(p.toolCalls.map((c) => c.name)).toEqual(["a", "b"]);
    expect(p.toolCalls[1]?.arguments).toEqual({ x: [1, { y: "}" }] });
    expect(p.toolCalls[1]?.argumentsText).toBe('{"x": [1, {"y": "}"}]}');
    expect(p.content).toBe("and");
  });

  it("separates <think> reasoning from content and calls; tool-call text inside reasoning is not a call", () => {
    const text = '<think>\nI should call <tool_call> maybe\n</think>\n\nOK.\n<tool_call>\n{"name": "f", "arguments": {"q": "é😀"}}\n</tool_call><|im_end|>';
    const p = parse(text);
    expect(p.reasoning).toBe("I should call <tool_call> maybe");
    expect(p.content).toBe("OK.");
    expect(p.toolCalls).toHaveLength(1);
    expect(p.toolCalls[0]?.arguments).toEqual({ q: "é😀" });
  });

  it("reads reasoning when the generation prompt already opened <think> (only </think> sampled)", () => {
    const p = parse("step one\nstep two\n</think>\n\nAnswer<|im_end|>");
    expect(p.reasoning).toBe("step one\nstep two");
    expect(p.content).toBe("Answer");
  });

  it("treats an empty think block as no reasoning", () => {
    const p = parse("<think>\n\n</think>\n\nHi<|im_end|>");
    expect(p.reasoning).toBeUndefined();
    expect(p.spans.reasoning).toBeUndefined();
    expect(p.content).toBe("Hi");
  });

  it("keeps an unterminated <think> as reasoning (truncated sample) with empty content", () => {
    const p = parse("<think>\nstill thinking");
    expect(p.reasoning).toBe("still thinking");
    expect(p.content).toBe("");
  });

  it("reports malformed blocks instead of throwing, and still parses the valid ones", () => {
    const text =
      "<tool_call>\n{bad json}\n</tool_call>" +
      '<tool_call>{"arguments": {}}</tool_call>' +
      '<tool_call>{"name": 3, "arguments": {}}</tool_call>' +
      '<tool_call>{"name": "f", "arguments": [1]}</tool_call>' +
      '<tool_call>["f"]</tool_call>' +
      '<tool_call>{"name": "g", "arguments": "plain words"}</tool_call>' +
      '<tool_call>{"name": "ok", "arguments": {"a": 1}}</tool_call>' +
      '<tool_call>{"name": "cut", "argu';
    const p = parse(text);
    expect(p.toolCalls.map((c) => c.name)).toEqual(["ok"]);
    expect(p.malformed.map((m) => m.reason)).toEqual([
      expect.stringContaining("invalid JSON"),
      expect.stringContaining('"name"'),
      expect.stringContaining('"name"'),
      expect.stringContaining("not a JSON object"),
      "the block is not a JSON object",
      expect.stringContaining("does not hold a JSON object"),
      "unterminated <tool_call> block",
    ]);
    expect(p.content).toBe("");
  });

  it("accepts JSON-encoded arguments strings, the `parameters` alias, and calls without arguments", () => {
    const p = parse('<tool_call>{"name": "a", "arguments": "{\\"k\\": 2}"}</tool_call><tool_call>{"name": "b", "parameters": {"z": true}}</tool_call><tool_call>{"name": "c"}</tool_call>');
    expect(p.toolCalls).toEqual([
      { name: "a", arguments: { k: 2 }, argumentsText: '{"k": 2}' },
      { name: "b", arguments: { z: true }, argumentsText: '{"z": true}' },
      { name: "c", arguments: {}, argumentsText: "{}" },
    ]);
    expect(p.spans.toolCalls[2]?.arguments).toBeNull();
  });

  it("uses the last duplicate key like JSON.parse, for values and spans alike", () => {
    const text = '<tool_call>{"name": "first", "arguments": {"a": 1}, "name": "second"}</tool_call>';
    const p = parse(text);
    expect(p.toolCalls[0]?.name).toBe("second");
  });

  it("gives UTF-16 offsets when names and arguments hold astral characters and escapes", () => {
    const text = '😀😀 hi\n<tool_call>\n{"name": "t\\u00e9😀", "arguments": {"s": "a\\"b\\\\😀"}}\n</tool_call>';
    const p = parse(text);
    expect(p.content).toBe("😀😀 hi");
    expect(p.toolCalls[0]?.name).toBe("té😀");
    expect(p.toolCalls[0]?.arguments).toEqual({ s: 'a"b\\😀' });
    expect(p.spans.toolCalls[0]?.block.start).toBe(text.indexOf("<tool_call>"));
  });

  it("honours custom end-of-turn texts", () => {
    expect(parseAssistantOutput("hi</s>", { endOfTurnTexts: ["</s>"] }).content).toBe("hi");
    expect(parseAssistantOutput("hi<|im_end|>", { endOfTurnTexts: [] }).content).toBe("hi<|im_end|>");
  });
});

describe("parseAssistantOutput on random garbage", () => {
  const PARTS = ["<tool_call>", "</tool_call>", "<think>", "</think>", "<|im_end|>", "{", "}", "[", "]", '"', '\\', ":", ",", '"name"', '"arguments"', '"f"', "{}", " ", "\n", "x", "é", "😀", "\ud800", "null", "1"];
  it("never throws, and every span it reports cuts out what it claims (5,000 inputs)", () => {
    const r = rng(99);
    let calls = 0;
    for (let i = 0; i < 5000; i++) {
      let text = "";
      const n = Math.floor(r() * 30);
      for (let k = 0; k < n; k++) {
        text += PARTS[Math.floor(r() * PARTS.length)];
        if (r() < 0.02) text += '<tool_call>{"name": "f", "arguments": {"a": "é😀"}}</tool_call>';
      }
      const p = parse(text);
      calls += p.toolCalls.length;
      for (const s of [...p.spans.content, ...p.spans.toolCalls.map((t) => t.block), ...p.malformed.map((m) => m.span)]) {
        expect(s.start).toBeGreaterThanOrEqual(0);
        expect(s.end).toBeLessThanOrEqual(text.length);
        expect(s.start).toBeLessThanOrEqual(s.end);
      }
    }
    expect(calls).toBeGreaterThan(100);
  });
});
