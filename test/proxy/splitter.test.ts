import { describe, expect, it } from "vitest";
import { parseAssistantOutput } from "../../src/chat/parse-output.js";
import { OutputSplitter } from "../../src/proxy/output/splitter.js";

/** Feeds text in the given pieces; returns what a streaming client would have seen. */
function feed(pieces: readonly string[], options: { startsInReasoning?: boolean } = {}): { content: string; deltas: string[]; reasoning: string[] } {
  const deltas: string[] = [];
  const reasoning: string[] = [];
  const s = new OutputSplitter({ content: (d) => deltas.push(d), reasoning: (r) => reasoning.push(r) }, options);
  for (const p of pieces) s.push(p);
  return { content: s.streamedContent, deltas, reasoning };
}

const chars = (t: string): string[] => [...t];

describe("OutputSplitter: what can be streamed before the completion is parsed", () => {
  const cases = [
    "Hello world<|im_end|>",
    "  \n leading and trailing spaces  \n<|im_end|>",
    "<think>\nstep 1\nstep 2\n</think>\n\nThe answer.<|im_end|>",
    'Let me check.\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call><|im_end|>',
    '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call><|im_end|>',
    "a < b and c <tool but not a call<|im_end|>",
    "ends without a stop token because of the length limit <thi",
  ];
  for (const text of cases) {
    it(`streams a prefix of the parsed content, char by char: ${JSON.stringify(text.slice(0, 30))}`, () => {
      const parsed = parseAssistantOutput(text);
      const seen = feed(chars(text));
      expect(parsed.content.startsWith(seen.content)).toBe(true);
      expect(seen.deltas.join("")).toBe(seen.content);
      expect(seen.content).not.toContain("<|im_end|>");
      expect(seen.content).not.toContain("<tool_call>");
      if (parsed.reasoning !== undefined && text.includes("</think>")) expect(seen.reasoning).toEqual([parsed.reasoning]);
    });
  }

  it("streams content up to the first tool call and nothing after it", () => {
    const seen = feed(chars('Checking.\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>\nmore<|im_end|>'));
    expect(seen.content).toBe("Checking.");
  });

  it("holds trailing whitespace back until more text follows, and never emits leading whitespace", () => {
    const seen = feed(["\n\n", "a", " ", "\n", "b", "  "]);
    expect(seen.deltas).toEqual(["a", " \nb"]);
  });

  it("starts inside reasoning when the generation prompt opened <think>", () => {
    const seen = feed(chars("plan it\n</think>\n\nDone.<|im_end|>"), { startsInReasoning: true });
    expect(seen.reasoning).toEqual(["plan it"]);
    expect(seen.content).toBe("Done.");
  });

  it("an empty <think></think> block is no reasoning: nothing is emitted for it, as the parse drops it", () => {
    const seen = feed(chars("<think>\n\n</think>\n\nDone.<|im_end|>"));
    expect(seen.reasoning).toEqual([]);
    expect(seen.content).toBe("Done.");
  });

  it("keeps multi-byte characters whole (it only ever sees decoded text)", () => {
    const seen = feed(chars("日本語 🎉 ok<|im_end|>"));
    expect(seen.content).toBe("日本語 🎉 ok");
  });
});
