import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAssistantOutput } from "../../src/chat/parse-output.js";
import type { ScriptFunction } from "../../src/engine/scripted/index.js";
import type { CallRecord, CompletionSpans, TokenRange } from "../../src/icr/records.js";
import { ICR_SCHEMA_VERSION } from "../../src/icr/records.js";
import { completionSpans } from "../../src/proxy/output/spans.js";
import { HfBpeTokenizer, tokenizerJsonSchema } from "../../src/tokenizer/hf-bpe.js";
import { tokenizerJson } from "../tokenizer/fixtures.js";
import { startProxy, WEATHER_TOOL_SCHEMA, type TestProxy } from "./helpers.js";

/** A block the parser cannot read (the arguments object is never closed), written as content before the real calls. */
const BROKEN = '<tool_call>\n{"name": "get_weather", "arguments": {"city": </tool_call>';

/** Parallel tool calls (one with multi-byte arguments) and, on request, a malformed block. */
const agent: ScriptFunction = (req) => {
  const text = req.messages.at(-1)?.content ?? "";
  const calls = [
    { name: "get_weather", arguments: { city: "Paris" } },
    { name: "get_weather", arguments: { city: "東京 🗼", unit: "C" } },
  ];
  if (text.includes("broken")) return { content: `Trying.\n${BROKEN}`, toolCalls: calls };
  if (text.includes("plain")) return { content: "No tools needed — ✓" };
  return { content: "Checking both.", toolCalls: calls };
};

/**
 * What the spans must be, computed independently of the proxy's code: the completion decoded, the parser's character
 * spans, and character → token offsets by re-encoding prefixes (exact for the byte tokenizer: no token straddles a
 * block or arguments boundary, special tokens included).
 */
function expectedSpans(p: TestProxy, r: CallRecord): CompletionSpans {
  const tok = p.engine.tokenizer;
  const text = tok.decode(r.completionTokens);
  const at = (chars: number): number => tok.encode(text.slice(0, chars)).length;
  const parsed = parseAssistantOutput(text);
  const toolCalls = parsed.spans.toolCalls.map((s, k) => {
    const block: TokenRange = [at(s.block.start), at(s.block.end)];
    const args: TokenRange | null = s.arguments ? [at(s.arguments.start), at(s.arguments.end)] : null;
    return {
      name: parsed.toolCalls[k]?.name ?? "",
      action: args ? [[block[0], args[0]] as TokenRange, [args[1], block[1]] as TokenRange] : [block],
      args: args ? [args] : [],
    };
  });
  return { toolCalls, malformed: parsed.malformed.length };
}

function only(p: TestProxy, sessionId: string): CallRecord {
  const records = p.calls(sessionId);
  expect(records).toHaveLength(1);
  return records[0] as CallRecord;
}

describe("proxy: each completion's tool-call token spans are recorded once, where the output is produced", () => {
  let p: TestProxy;
  beforeAll(async () => {
    p = await startProxy(agent);
  });
  afterAll(async () => p.close());

  const cases: { protocol: string; stream: boolean; call: (p: TestProxy, apiKey: string, text: string, stream: boolean) => Promise<unknown> }[] = [];
  for (const stream of [false, true]) {
    cases.push({
      protocol: "openai-chat",
      stream,
      call: async (p, key, text, s) => {
        const client = p.openai(key);
        const body = { model: "policy", messages: [{ role: "user" as const, content: text }], tools: [{ type: "function" as const, function: { name: "get_weather", parameters: WEATHER_TOOL_SCHEMA } }] };
        return s ? client.chat.completions.stream(body).finalChatCompletion() : client.chat.completions.create(body);
      },
    });
    cases.push({
      protocol: "openai-responses",
      stream,
      call: async (p, key, text, s) => {
        const client = p.openai(key);
        const body = { model: "policy", input: text, tools: [{ type: "function" as const, name: "get_weather", parameters: WEATHER_TOOL_SCHEMA, strict: false }], store: false };
        return s ? client.responses.stream(body).finalResponse() : client.responses.create(body);
      },
    });
    cases.push({
      protocol: "anthropic-messages",
      stream,
      call: async (p, key, text, s) => {
        const client = p.anthropic(key);
        const body = { model: "policy", max_tokens: 800, messages: [{ role: "user" as const, content: text }], tools: [{ name: "get_weather", input_schema: WEATHER_TOOL_SCHEMA as { type: "object" } }] };
        return s ? client.messages.stream(body).finalMessage() : client.messages.create(body);
      },
    });
  }

  for (const c of cases) {
    it(`${c.protocol}${c.stream ? " (streamed)" : ""}: parallel calls, a malformed block and a plain answer get the parser's spans in tokens`, async () => {
      for (const text of ["parallel weather", "broken weather", "plain"]) {
        const { sessionId, apiKey } = p.session();
        await c.call(p, apiKey, text, c.stream);
        const r = only(p, sessionId);
        expect(r.protocol).toBe(c.protocol);
        expect(r.schemaVersion).toBe(ICR_SCHEMA_VERSION);
        expect(r.spans).toEqual(expectedSpans(p, r));
        const spans = r.spans as CompletionSpans;
        expect(spans.malformed).toBe(text.startsWith("broken") ? 1 : 0);
        expect(spans.toolCalls.map((t) => t.name)).toEqual(text === "plain" ? [] : ["get_weather", "get_weather"]);
        // The answer the harness got names the same calls, in the same order.
        expect(spans.toolCalls.map((t) => t.name)).toEqual((r.response?.toolCalls ?? []).map((t) => t.name));
        // The args tokens decode to each call's arguments value, multi-byte characters whole.
        const argsText = spans.toolCalls.map((t) => p.engine.tokenizer.decode(t.args.flatMap(([a, b]) => r.completionTokens.slice(a, b))));
        expect(argsText.map((a) => JSON.parse(a) as unknown)).toEqual(text === "plain" ? [] : [{ city: "Paris" }, { city: "東京 🗼", unit: "C" }]);
      }
    });
  }
});

describe("completionSpans with a BPE tokenizer whose tokens straddle the arguments boundary", () => {
  it("gives a token shared by the JSON around the name and the arguments value to args, and covers the block exactly", () => {
    // The fixture tokenizer plus one merge, "Ġ{" (space + brace): `"arguments": {` then ends in a token that is half
    // action (the space) and half args (the brace).
    const json = tokenizerJson() as { model: { vocab: Record<string, number>; merges: string[] }; added_tokens: { id: number }[] };
    json.model.merges.push("Ġ {");
    json.model.vocab["Ġ{"] = 300;
    const hf = new HfBpeTokenizer(tokenizerJsonSchema.parse(json));
    const text = '<tool_call>\n{"name": "get", "arguments": {"q": "hello é"}}\n</tool_call><|im_end|>';
    const ids = hf.encode(text);
    const straddle = ids.indexOf(300);
    expect(straddle).toBeGreaterThan(0);
    const output = parseAssistantOutput(hf.decode(ids));
    const spans = completionSpans(hf, ids, output);
    const expand = (rs: readonly TokenRange[]): number[] => rs.flatMap(([a, b]) => Array.from({ length: b - a }, (_, k) => a + k));
    const tc = spans.toolCalls[0];
    expect(spans.toolCalls).toHaveLength(1);
    expect(tc?.name).toBe("get");
    const args = expand(tc?.args ?? []);
    const action = expand(tc?.action ?? []);
    expect(args).toContain(straddle);
    expect(action).not.toContain(straddle);
    expect(hf.decode(args.map((i) => ids[i] as number))).toBe(' {"q": "hello é"}');
    // action ∪ args = every token of the block, each once; the end-of-turn token is in neither.
    const block = [...action, ...args].sort((a, b) => a - b);
    expect(block).toEqual(Array.from({ length: ids.length - 1 }, (_, k) => k));
    expect(spans.malformed).toBe(0);
  });
});
