import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defaultCodec } from "../../src/chat/codec.js";
import { parseAssistantOutput } from "../../src/chat/parse-output.js";
import { renderAssistantTurn } from "../../src/chat/render-turn.js";
import type { ChatMessage, ToolSpec } from "../../src/chat/types.js";
import { EngineError, UserError } from "../../src/core/errors.js";
import { createEngine, listEngines } from "../../src/engine/index.js";
import { createScriptedEngine } from "../../src/engine/scripted/index.js";
import type { ScriptRequest } from "../../src/engine/scripted/index.js";
import { DEFAULT_SAMPLING } from "../../src/engine/types.js";
import type { GenerateRequest, SamplingEngine } from "../../src/engine/types.js";
import { runEngineContract } from "./engine-contract.js";

const dir = mkdtempSync(join(tmpdir(), "hrl-scripted-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function module(name: string, source: string): string {
  const path = join(dir, name);
  writeFileSync(path, source);
  return path;
}

const tools: ToolSpec[] = [{ name: "bash", description: "Run", parameters: { type: "object", properties: { cmd: { type: "string" } } } }];
const messages: ChatMessage[] = [
  { role: "system", content: "sys" },
  { role: "user", content: "list" },
  { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "bash", arguments: '{"cmd":"ls"}' }, { id: "c2", name: "bash", arguments: "not json" }] },
  { role: "tool", content: "a.txt", toolCallId: "c1" },
  { role: "tool", content: "?", toolCallId: "c2" },
];

function request(engine: SamplingEngine, over: Partial<GenerateRequest> = {}): GenerateRequest {
  const prompt = engine.tokenizer.encode(engine.renderer.render(messages, tools, { addGenerationPrompt: true }));
  return { promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 1000 }, context: { sessionId: "ses_1", callId: "call_1", rolloutId: "r1", harness: "codex", messages, tools }, ...over };
}

// A script that answers in prose when the last message is from the user; otherwise it calls a tool.
const contractScript = module(
  "contract.mjs",
  `export default (req) => ({ content: "Hello! You said: " + (req.messages.at(-1)?.content ?? "nothing") });`,
);
runEngineContract({ name: "scripted", create: () => createEngine(`scripted:${contractScript}`), sampling: false });

describe("scripted engine", () => {
  it("is registered under the scripted scheme", () => {
    expect(listEngines().map((e) => e.name)).toContain("scripted");
  });

  it("hands the script the normalised request with parsed tool-call arguments (raw text when not JSON)", async () => {
    const seen: ScriptRequest[] = [];
    const engine = createScriptedEngine((req) => {
      seen.push(req);
      return { content: "ok" };
    });
    await engine.generate(request(engine));
    expect(seen).toHaveLength(1);
    const req = seen[0] as ScriptRequest;
    expect(req).toMatchObject({ sessionId: "ses_1", callId: "call_1", rolloutId: "r1", harness: "codex", tools });
    expect(req.messages[2]?.toolCalls).toEqual([
      { id: "c1", name: "bash", arguments: { cmd: "ls" } },
      { id: "c2", name: "bash", arguments: "not json" },
    ]);
    expect(req.messages[3]).toEqual({ role: "tool", content: "a.txt", toolCallId: "c1" });
  });

  it("emits exactly the rendered turn's tokens, logprob 0 each, through onToken, ending with <|im_end|>", async () => {
    const engine = await createEngine(`scripted:${module("async.mjs", `export default async () => ({ content: "Two calls.", toolCalls: [{ name: "bash", arguments: { cmd: "pwd" } }, { name: "bash", arguments: { cmd: "é😀" } }] });`)}`);
    const seen: [number, number][] = [];
    const r = await engine.generate(request(engine, { onToken: (t, lp) => seen.push([t, lp]) }));
    const expected = renderAssistantTurn(defaultCodec(), messages, tools, { content: "Two calls.", toolCalls: [{ name: "bash", arguments: { cmd: "pwd" } }, { name: "bash", arguments: { cmd: "é😀" } }] });
    expect(r.tokens).toEqual(expected.tokens);
    expect(r.logprobs).toEqual(r.tokens.map(() => 0));
    expect(seen).toEqual(r.tokens.map((t) => [t, 0]));
    expect(r.finishReason).toBe("stop");
    expect(r.policyVersion).toBe(0);
    expect(r.tokens.at(-1)).toBe(engine.tokenizer.specialTokens.get("<|im_end|>"));
    const parsed = parseAssistantOutput(engine.tokenizer.decode(r.tokens));
    expect(parsed.toolCalls.map((c) => c.arguments)).toEqual([{ cmd: "pwd" }, { cmd: "é😀" }]);
    expect(parsed.content).toBe("Two calls.");
  });

  it("truncates at maxTokens with finishReason length", async () => {
    const engine = createScriptedEngine(() => ({ content: "abcdefghij" }));
    const r = await engine.generate(request(engine, { params: { ...DEFAULT_SAMPLING, maxTokens: 4 } }));
    expect(engine.tokenizer.decode(r.tokens)).toBe("abcd");
    expect(r.finishReason).toBe("length");
  });

  it("stops at the first stop token even if the script's text contains one", async () => {
    const engine = createScriptedEngine(() => ({ content: "a<|im_end|>b" }));
    const r = await engine.generate(request(engine));
    expect(engine.tokenizer.decode(r.tokens)).toBe("a<|im_end|>");
    expect(r.finishReason).toBe("stop");
  });

  it("aborts between tokens when the signal fires, with a per-token delay so streaming takes real time", async () => {
    const engine = await createEngine(`scripted:${contractScript}?delay=2`);
    const ac = new AbortController();
    let n = 0;
    const r = await engine.generate(request(engine, { signal: ac.signal, onToken: () => ++n === 3 && ac.abort() }));
    expect(r.finishReason).toBe("abort");
    expect(r.tokens).toHaveLength(3);
    const pre = new AbortController();
    pre.abort();
    let called = false;
    const e2 = createScriptedEngine(() => {
      called = true;
      return {};
    });
    expect((await e2.generate(request(e2, { signal: pre.signal }))).finishReason).toBe("abort");
    expect(called).toBe(false);
  });

  it("returns abort at once when the signal fires while a slow script is still thinking", async () => {
    let release: () => void = () => {};
    const engine = createScriptedEngine(() => new Promise((resolve) => (release = () => resolve({ content: "late" }))));
    const ac = new AbortController();
    const pending = engine.generate(request(engine, { signal: ac.signal }));
    setTimeout(() => ac.abort(), 5);
    const r = await pending;
    expect(r.finishReason).toBe("abort");
    expect(r.tokens).toEqual([]);
    release();
  });

  it("turns a bad reply into an EngineError that says what is wrong", async () => {
    const cases: [unknown, RegExp][] = [
      [{ toolCalls: [{ arguments: {} }] }, /toolCalls/],
      [{ toolCalls: [{ name: "f", arguments: [1, 2] }] }, /arguments/],
      [{ content: 5 }, /content/],
      [{ text: "typo" }, /text/],
      ["just a string", /object/],
    ];
    for (const [reply, msg] of cases) {
      const engine = createScriptedEngine(() => reply as never);
      const err = await engine.generate(request(engine)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EngineError);
      expect((err as EngineError).code).toBe("invalid_scripted_reply");
      expect((err as EngineError).message).toMatch(msg);
    }
  });

  it("treats an empty or undefined reply as an empty turn", async () => {
    const engine = createScriptedEngine(() => undefined as never);
    const r = await engine.generate(request(engine));
    expect(engine.tokenizer.decode(r.tokens)).toBe("<|im_end|>");
  });

  it("wraps a throwing script as an EngineError", async () => {
    const engine = createScriptedEngine(() => {
      throw new Error("script blew up");
    });
    await expect(engine.generate(request(engine))).rejects.toThrow(/script blew up/);
    await expect(engine.generate(request(engine))).rejects.toBeInstanceOf(EngineError);
  });

  it("recovers the conversation from bare prompt tokens when no context is given", async () => {
    const seen: ScriptRequest[] = [];
    const engine = createScriptedEngine((req) => {
      seen.push(req);
      return { content: "fine" };
    });
    const { context: _unused, ...bare } = request(engine);
    const r = await engine.generate(bare);
    expect(engine.tokenizer.decode(r.tokens)).toBe("fine<|im_end|>");
    expect(seen[0]?.tools).toEqual(tools);
    expect(seen[0]?.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "tool"]);
    expect(seen[0]?.messages[2]?.toolCalls?.map((c) => c.arguments)).toEqual([{ cmd: "ls" }, "not json"]);
  });

  it("reports module problems as UserErrors", async () => {
    const bad: [string, RegExp][] = [
      [join(dir, "missing.mjs"), /does not exist/],
      [module("syntax.mjs", "export default (=>"), /cannot load/],
      [module("nodefault.mjs", "export const x = 1;"), /default-export a function/],
    ];
    for (const [path, msg] of bad) {
      const err = await createEngine(`scripted:${path}`).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UserError);
      expect((err as UserError).message).toMatch(msg);
    }
    await expect(createEngine("scripted:")).rejects.toThrow(/needs a module path/);
    await expect(createEngine(`scripted:${contractScript}?ctx=abc`)).rejects.toThrow(/ctx must be a positive integer/);
    await expect(createEngine(`scripted:${contractScript}?temp=1`)).rejects.toThrow(/unknown option "temp"/);
  });

  it("has a 262144-token context by default, ?ctx=N overrides it, and longer prompts are refused", async () => {
    expect((await createEngine(`scripted:${contractScript}`)).model.contextWindow).toBe(262_144);
    const small = await createEngine(`scripted:${contractScript}?ctx=50`);
    expect(small.model.contextWindow).toBe(50);
    expect(small.spec).toBe(`scripted:${contractScript}?ctx=50`);
    await expect(small.generate(request(small))).rejects.toThrow(UserError);
    // Generation also stops at the context window.
    const tiny = createScriptedEngine(() => ({ content: "x".repeat(100) }), { contextWindow: 30 });
    const r = await tiny.generate({ ...request(tiny), promptTokens: new Array<number>(25).fill(65) });
    expect(r.tokens).toHaveLength(5);
    expect(r.finishReason).toBe("length");
  });
});
