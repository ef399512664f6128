import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProxy, expectTokenExactChain, weatherAgent, WEATHER_TOOL_SCHEMA, type TestProxy } from "./helpers.js";

type Item = OpenAI.Responses.ResponseInputItem;

/** The SDK adds `output_text` only to non-streamed responses; streamed final responses are read from their items. */
function textOf(r: OpenAI.Responses.Response): string {
  return r.output.flatMap((o) => (o.type === "message" ? o.content.map((c) => (c.type === "output_text" ? c.text : "")) : [])).join("");
}
const tools: OpenAI.Responses.Tool[] = [
  { type: "function", name: "get_weather", description: "Weather for a city", parameters: WEATHER_TOOL_SCHEMA, strict: false },
  { type: "custom", name: "apply_patch", description: "Apply a patch" },
];

describe("proxy: OpenAI Responses through the official openai client", () => {
  let p: TestProxy;
  beforeAll(async () => {
    p = await startProxy(weatherAgent);
  });
  afterAll(async () => p.close());

  it("answers a non-streamed request with instructions", async () => {
    const { sessionId, apiKey } = p.session();
    const r = await p.openai(apiKey).responses.create({ model: "policy", instructions: "Be nice.", input: "hello", store: false });
    expect(r.status).toBe("completed");
    expect(r.output_text).toBe("Echo: hello — ünïcødé ✓ 日本語 🎉");
    expect(r.id).toMatch(/^resp_/);
    const [rec] = p.calls(sessionId);
    expect(rec?.protocol).toBe("openai-responses");
    expect(rec?.messages).toEqual([
      { role: "system", content: "Be nice." },
      { role: "user", content: "hello" },
    ]);
    expect(r.usage?.input_tokens).toBe(rec?.promptTokens.length);
  });

  it("streams text deltas with increasing sequence numbers and a consistent final response", async () => {
    const { apiKey } = p.session();
    const stream = p.openai(apiKey).responses.stream({ model: "policy", input: [{ role: "user", content: "stream this" }] });
    const types: string[] = [];
    const seqs: number[] = [];
    let text = "";
    for await (const ev of stream) {
      types.push(ev.type);
      seqs.push(ev.sequence_number);
      if (ev.type === "response.output_text.delta") text += ev.delta;
    }
    const final = await stream.finalResponse();
    expect(text).toBe("Echo: stream this — ünïcødé ✓ 日本語 🎉");
    expect(textOf(final)).toBe(text);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(types.slice(-4)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"]);
    expect(types.filter((t) => t === "response.output_text.delta").length).toBeGreaterThan(10);
  });

  it("runs a multi-turn tool session (parallel calls, function_call_output items) token-exactly", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.openai(apiKey);
    const input: Item[] = [{ role: "developer", content: "Use tools." }, { role: "user", content: [{ type: "input_text", text: "parallel weather" }] }];
    const r1 = await client.responses.stream({ model: "policy", input, tools, store: false }).finalResponse();
    const calls = r1.output.flatMap((o) => (o.type === "function_call" ? [o] : []));
    expect(calls.map((c) => JSON.parse(c.arguments))).toEqual([{ city: "Paris" }, { city: "Tokyo", unit: "C" }]);
    expect(r1.output[0]?.type).toBe("message");
    input.push(...(r1.output as Item[]));
    for (const c of calls) input.push({ type: "function_call_output", call_id: c.call_id, output: `sunny in ${JSON.parse(c.arguments).city}` });
    const r2 = await client.responses.create({ model: "policy", input, tools, store: false });
    expect(r2.output_text).toBe("Results: sunny in Paris | sunny in Tokyo");
    input.push(...(r2.output as Item[]), { role: "user", content: "more weather" });
    const r3 = await client.responses.stream({ model: "policy", input, tools, store: false }).finalResponse();
    expect(r3.output.map((o) => o.type)).toEqual(["function_call"]);
    const records = p.calls(sessionId);
    expect(records).toHaveLength(3);
    expectTokenExactChain(records);
  });

  it("calls a freeform custom tool with a custom_tool_call item and reads custom_tool_call_output back", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.openai(apiKey);
    const input: Item[] = [{ role: "user", content: "patch the file" }];
    const stream = client.responses.stream({ model: "policy", input, tools, store: false });
    const types: string[] = [];
    for await (const ev of stream) types.push(ev.type);
    const r1 = await stream.finalResponse();
    const call = r1.output.find((o) => o.type === "custom_tool_call");
    if (call?.type !== "custom_tool_call") throw new Error("expected a custom tool call");
    expect(call.name).toBe("apply_patch");
    expect(call.input).toBe("*** Begin Patch\n*** End Patch");
    expect(types).toContain("response.custom_tool_call_input.done");
    input.push(...(r1.output as Item[]), { type: "custom_tool_call_output", call_id: call.call_id, output: "Done!" });
    const r2 = await client.responses.create({ model: "policy", input, tools, store: false });
    expect(r2.output_text).toBe("Results: Done!");
    expectTokenExactChain(p.calls(sessionId));
  });

  it("returns reasoning items that round-trip token-exactly, also via encrypted_content only", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.openai(apiKey);
    const input: Item[] = [{ role: "user", content: "think" }];
    const r1 = await client.responses.stream({ model: "policy", input, store: false, include: ["reasoning.encrypted_content"] }).finalResponse();
    const reasoning = r1.output[0];
    if (reasoning?.type !== "reasoning") throw new Error("expected a reasoning item first");
    expect(reasoning.content?.[0]?.text).toBe("The user wants me to think. 2+2=4.");
    expect(textOf(r1)).toBe("The answer is 4.");
    // A stateless client may echo only the encrypted copy.
    input.push({ type: "reasoning", id: reasoning.id, summary: [], encrypted_content: reasoning.encrypted_content ?? "" }, ...(r1.output.slice(1) as Item[]));
    input.push({ role: "user", content: "again" });
    await client.responses.create({ model: "policy", input, store: false });
    expectTokenExactChain(p.calls(sessionId));
  });
});
