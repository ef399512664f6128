import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { qwen3Codec, toolCallText } from "../../src/bench/fidelity-model.js";
import { createScriptedEngine } from "../../src/engine/scripted/index.js";
import type { GenerateRequest, GenerateResult, SamplingEngine } from "../../src/engine/types.js";
import { startProxy, type TestProxy } from "./helpers.js";

/**
 * The Responses stream keeps one identity per output item, for every combination of items a Qwen3 completion parses
 * into: each `output_index` is added once, in order, and done once with the same item id, type and call_id; every
 * event inside an item names that item; `response.completed` lists exactly the streamed items at their indices. This
 * is what OpenClaw's stream reader checks (it aborts with "Responses stream changed output item identity"): an empty
 * `<think></think>` block used to go out as a reasoning item the final response did not list, shifting every index.
 */

/** Completions as Qwen3 samples them (raw text, special tokens included), chosen by the user's message. */
const call = (command: string): string => toolCallText("exec", `{"command": ${JSON.stringify(command)}}`);
const COMPLETIONS: Record<string, string> = {
  "empty think + tool call": `<think>\n\n</think>\n\n${call("ls")}<|im_end|>`,
  "empty think + message": "<think>\n\n</think>\n\nAll done.<|im_end|>",
  "reasoning + tool call": `<think>\nI need the listing.\n</think>\n\n${call("ls")}<|im_end|>`,
  "reasoning + message": "<think>\nNothing left to do.\n</think>\n\nAll done.<|im_end|>",
  "reasoning + message + two tool calls": `<think>\nTwo steps.\n</think>\n\nRunning both.\n${call("ls")}\n${call("pwd")}<|im_end|>`,
  "two tool calls": `${call("ls")}\n${call("pwd")}<|im_end|>`,
  "reasoning only": "<think>\nHmm.\n</think><|im_end|>",
  "nothing": "<|im_end|>",
  "message + malformed call": "Trying.\n<tool_call>\nnot json\n</tool_call><|im_end|>",
  // No `<think>` opened, yet `</think>` sampled: the text before it was already streamed as content.
  "stray </think> + tool call": `I need the listing.\n</think>\n\n${call("ls")}<|im_end|>`,
};

/** A model that samples the given text token by token (Qwen3's tokenizer), as llama.cpp streams it. */
function sampling(base: SamplingEngine): SamplingEngine {
  return {
    spec: base.spec,
    model: base.model,
    tokenizer: base.tokenizer,
    renderer: base.renderer,
    policyVersion: 0,
    close: () => base.close(),
    async generate(request: GenerateRequest): Promise<GenerateResult> {
      const user = [...(request.context?.messages ?? [])].reverse().find((m) => m.role === "user");
      const text = COMPLETIONS[user?.content ?? ""];
      if (text === undefined) throw new Error(`no completion for ${JSON.stringify(user?.content)}`);
      const tokens = base.tokenizer.encode(text);
      for (const id of tokens) request.onToken?.(id, 0);
      return { tokens, logprobs: tokens.map(() => 0), finishReason: "stop", policyVersion: 0 };
    },
  };
}

interface Identity {
  type: string;
  id: string;
  callId: string | null;
}
const identity = (item: { type: string; id?: string | null; call_id?: string | null }): Identity => ({ type: item.type, id: item.id ?? "", callId: item.call_id ?? null });

/** Streams one turn through the SDK and checks the event sequence; returns the items' identities in output order. */
async function streamedItems(client: OpenAI, input: string): Promise<{ items: Identity[]; final: OpenAI.Responses.Response }> {
  const tools: OpenAI.Responses.Tool[] = [{ type: "function", name: "exec", description: "Run a shell command", parameters: { type: "object", properties: { command: { type: "string" } } }, strict: false }];
  const stream = client.responses.stream({ model: "policy", input, tools, store: false });
  const added: Identity[] = [];
  const done = new Set<number>();
  let completed: OpenAI.Responses.Response | undefined;
  for await (const ev of stream) {
    if (ev.type === "response.output_item.added") {
      expect(ev.output_index, "output indexes are assigned in order, never reused").toBe(added.length);
      expect(ev.item.id, "an added item has its id").toBeTruthy();
      added.push(identity(ev.item));
    } else if (ev.type === "response.output_item.done") {
      expect(done.has(ev.output_index), `item ${ev.output_index} is done once`).toBe(false);
      done.add(ev.output_index);
      expect(identity(ev.item), `item ${ev.output_index} keeps its identity from added to done`).toEqual(added[ev.output_index]);
    } else if (ev.type === "response.completed" || ev.type === "response.incomplete") {
      completed = ev.response;
    } else if ("item_id" in ev && "output_index" in ev) {
      const at = added[ev.output_index];
      expect(at, `${ev.type} names an added item`).toBeDefined();
      expect(done.has(ev.output_index), `${ev.type} comes before its item is done`).toBe(false);
      expect(ev.item_id, `${ev.type} names the item at its output_index`).toBe(at?.id);
    }
  }
  expect(completed).toBeDefined();
  expect([...done].sort((a, b) => a - b), "every added item is done").toEqual(added.map((_a, i) => i));
  const final = completed as OpenAI.Responses.Response;
  expect(final.output.map(identity), "the final response lists exactly the streamed items, at their indices").toEqual(added);
  return { items: added, final };
}

describe("proxy: the Responses stream keeps one identity per output item (Qwen3 template, official openai client)", () => {
  let p: TestProxy;
  beforeAll(async () => {
    const codec = qwen3Codec();
    p = await startProxy(() => ({}), { engineOverride: sampling(createScriptedEngine(() => ({}), { modelId: "policy", codec })) });
  }, 60_000);
  afterAll(async () => p?.close());

  const expected: Record<string, string[]> = {
    "empty think + tool call": ["function_call"],
    "empty think + message": ["message"],
    "reasoning + tool call": ["reasoning", "function_call"],
    "reasoning + message": ["reasoning", "message"],
    "reasoning + message + two tool calls": ["reasoning", "message", "function_call", "function_call"],
    "two tool calls": ["function_call", "function_call"],
    "reasoning only": ["reasoning", "message"],
    "nothing": ["message"],
    "message + malformed call": ["message"],
    "stray </think> + tool call": ["message", "function_call"],
  };
  for (const [name, types] of Object.entries(expected)) {
    it(name, async () => {
      const { sessionId, apiKey } = p.session();
      const { items, final } = await streamedItems(p.openai(apiKey), name);
      expect(items.map((i) => i.type)).toEqual(types);
      expect(new Set(items.map((i) => i.id)).size, "item ids are distinct").toBe(items.length);
      // The record keeps the response the client received, and the turn as the client will send it back.
      const [rec] = p.calls(sessionId);
      expect((rec?.rawResponse as { output: unknown[] }).output).toEqual(final.output);
      expect(rec?.response?.toolCalls?.length ?? 0).toBe(types.filter((t) => t === "function_call").length);
      expect(rec?.response?.reasoning ?? "", "reasoning only where a reasoning item went out").toBe(
        final.output.flatMap((o) => (o.type === "reasoning" ? (o.content ?? []).map((c) => c.text) : [])).join(""),
      );
    });
  }
});
