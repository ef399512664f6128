import { mkdtempSync, rmSync } from "node:fs";
import { unescapeSpecialText } from "../../src/tokenizer/special-escape.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defaultCodec, defaultTemplateSource } from "../../src/chat/codec.js";
import { JinjaChatRenderer } from "../../src/chat/jinja-renderer.js";
import type { AssistantTurn, ChatMessage, ToolSpec } from "../../src/chat/types.js";
import { createHistoryPlanner } from "../../src/history/planner.js";
import { MemoryStore } from "../../src/store/memory.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import type { Store } from "../../src/store/types.js";
import { SessionSim, echo, rng, toolResults } from "./session-sim.js";

const codec = defaultCodec();
const TOOLS: ToolSpec[] = [
  { name: "read_file", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
  { name: "run", description: "Run a shell command", parameters: { type: "object", properties: { cmd: { type: "string" }, timeout: { type: "number" } } } },
];
const dir = mkdtempSync(join(tmpdir(), "hrl-history-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Drives one generated session of `turns` calls where the harness leaves history alone; returns the simulator. */
function playSession(sim: SessionSim, seed: number, turns: number, start: ChatMessage[] = [
  { role: "system", content: "You are a coding agent. Ünïcode ✓ and 漢字 welcome." },
  { role: "user", content: `Task ${seed}: fix the failing test in src/app.ts` },
]): ChatMessage[] {
  const random = rng(seed);
  let messages = start;
  for (let t = 0; t < turns; t++) {
    const r = random();
    const reasoning = random() < 0.4 ? `thinking about step ${t}…` : undefined;
    let turn: AssistantTurn;
    let truncateTo: number | undefined;
    if (r < 0.45) turn = { content: random() < 0.5 ? "" : `Reading file ${t}.`, toolCalls: [{ name: "read_file", arguments: { path: `src/f${t}.ts` } }] };
    else if (r < 0.65) turn = { toolCalls: [{ name: "run", arguments: { cmd: `ls -la /tmp/${t}`, timeout: 5 } }, { name: "read_file", arguments: { path: `a${t}.txt` } }, { name: "run", arguments: { cmd: "echo \"quoted\" \\ back" } }] };
    else if (r < 0.85) turn = { content: `Done with step ${t}.\n\nSummary: all good.` };
    else {
      turn = { content: `A long answer that will be cut off at the token limit, step ${t}, with more words after it.`, toolCalls: [{ name: "run", arguments: { cmd: "true" } }] };
      truncateTo = 10 + Math.floor(random() * 40);
    }
    if (reasoning !== undefined) turn.reasoning = reasoning;
    const { record } = sim.call(echo(messages), TOOLS, turn, truncateTo === undefined ? {} : { truncateTo });
    const response = echo(record.response!);
    if (truncateTo !== undefined) messages = [...messages, response, { role: "user", content: "Continue." }];
    else if (response.toolCalls) messages = [...messages, response, ...toolResults(response, (name, i) => `${name} result ${t}.${i}\nline two`)];
    else messages = [...messages, response, { role: "user", content: `Next request ${t}.` }];
  }
  return messages;
}

/** The token-exact property: every call extends its parent's prompt + completion, token for token. */
function expectTokenExact(sim: SessionSim): void {
  const [first, ...rest] = sim.records;
  expect(first?.parentCallId).toBeNull();
  expect(first?.break).toBeNull();
  let prev = first!;
  for (const r of rest) {
    expect(r.break, `call ${r.callId}`).toBeNull();
    expect(r.parentCallId).toBe(prev.callId);
    const context = [...prev.promptTokens, ...prev.completionTokens];
    expect(r.reusedPrefixTokens).toBe(context.length);
    expect(r.promptTokens.slice(0, context.length)).toEqual(context);
    // When the parent stopped normally, the spliced prompt is exactly what the template renders for the request.
    const rendered = codec.renderer.render(r.messages, r.tools, { addGenerationPrompt: true });
    // The rendered text marks request text that spells special tokens (special-escape.ts); decoding has no marks.
    if (prev.finishReason === "stop") expect(codec.tokenizer.decode(r.promptTokens)).toBe(unescapeSpecialText(rendered).clean);
    // A truncated turn is followed by the end-of-turn as context, then the rest of the conversation.
    else expect(codec.tokenizer.decode(r.promptTokens.slice(context.length)).startsWith("<|im_end|>\n<|im_start|>user\nContinue.")).toBe(true);
    prev = r;
  }
}

describe("token-exact history", () => {
  it("extends the parent's prompt + completion on every call of generated sessions (tool calls, parallel calls, truncated turns)", () => {
    const store = new MemoryStore();
    const planner = createHistoryPlanner(store);
    let truncated = 0;
    let parallel = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const sim = new SessionSim(planner, store, codec);
      playSession(sim, seed, 6 + (seed % 5));
      expectTokenExact(sim);
      truncated += sim.records.filter((r) => r.finishReason === "length").length;
      parallel += sim.records.filter((r) => (r.response?.toolCalls?.length ?? 0) > 1).length;
    }
    // The generator really exercised the interesting cases.
    expect(truncated).toBeGreaterThan(0);
    expect(parallel).toBeGreaterThan(0);
  });

  it("keeps the sampled ids even where they are not the tokenizer's own encoding of their text", () => {
    const store = new MemoryStore();
    const planner = createHistoryPlanner(store);
    const sim = new SessionSim(planner, store, codec);
    let messages: ChatMessage[] = [{ role: "user", content: "look around" }];
    for (let t = 0; t < 3; t++) {
      // The "model" writes <tool_call> … </tool_call> byte by byte instead of sampling the special tokens.
      const { record } = sim.call(echo(messages), TOOLS, { toolCalls: [{ name: "run", arguments: { cmd: `ls ${t}` } }] }, { spellOut: ["<tool_call>", "</tool_call>"] });
      expect(record.completionTokens).not.toContain(codec.tokenizer.specialTokens.get("<tool_call>"));
      messages = [...messages, echo(record.response!), ...toolResults(record.response!, () => "file")];
    }
    expectTokenExact(sim);
    const last = sim.records.at(-1)!;
    // Re-rendering and re-tokenising the same text would have turned the spelled-out blocks into special tokens.
    expect(last.promptTokens).not.toEqual(codec.tokenizer.encode(codec.renderer.render(last.messages, last.tools, { addGenerationPrompt: true })));
  });

  it("still splices when the renderer instance changes mid-session (an engine reloaded with the same template)", () => {
    const store = new MemoryStore();
    const planner = createHistoryPlanner(store);
    const sim = new SessionSim(planner, store, codec);
    const messages = playSession(sim, 7, 4);
    const other = { tokenizer: codec.tokenizer, renderer: new JinjaChatRenderer(defaultTemplateSource(), { eosToken: "<|endoftext|>", endOfTurn: "<|im_end|>" }) };
    const plan = planner.plan(sim.sessionId, { messages: echo(messages), tools: TOOLS }, other);
    const last = sim.records.at(-1)!;
    expect(plan.break).toBeNull();
    expect(plan.parentCallId).toBe(last.callId);
    expect(plan.promptTokens.slice(0, plan.reusedPrefixTokens)).toEqual([...last.promptTokens, ...last.completionTokens]);
  });

  it("keeps interleaved sessions apart", () => {
    const store = new MemoryStore();
    const planner = createHistoryPlanner(store);
    const a = new SessionSim(planner, store, codec);
    const b = new SessionSim(planner, store, codec);
    // Same opening messages in both sessions: each must only ever extend its own calls.
    let ma: ChatMessage[] = [{ role: "user", content: "same start" }];
    let mb: ChatMessage[] = [{ role: "user", content: "same start" }];
    for (let t = 0; t < 4; t++) {
      const ra = a.call(echo(ma), TOOLS, { content: `a${t}` }).record;
      const rb = b.call(echo(mb), TOOLS, { content: `b${t}` }).record;
      ma = [...ma, echo(ra.response!), { role: "user", content: `more ${t}` }];
      mb = [...mb, echo(rb.response!), { role: "user", content: `more ${t}` }];
    }
    expectTokenExact(a);
    expectTokenExact(b);
    expect(b.records[0]?.parentCallId).toBeNull();
  });

  it("stays token-exact after a restart: a new planner reloads the session from the SQLite store", () => {
    const path = join(dir, "restart.sqlite");
    const store1 = new SqliteStore(path);
    const planner1 = createHistoryPlanner(store1);
    const sim1 = new SessionSim(planner1, store1, codec);
    const messages = playSession(sim1, 99, 7);
    const expected = planner1.plan(sim1.sessionId, { messages: echo(messages), tools: TOOLS }, codec);
    store1.close();

    const store2: Store = new SqliteStore(path);
    const planner2 = createHistoryPlanner(store2);
    const sim2 = new SessionSim(planner2, store2, codec, sim1.sessionId);
    const { plan } = sim2.call(echo(messages), TOOLS, { content: "after restart" });
    expect(plan).toEqual(expected);
    expect(plan.parentCallId).toBe(sim1.records.at(-1)?.callId);
    store2.close();
  });

  it("stays token-exact when sessions are evicted from memory and reloaded", () => {
    const store = new MemoryStore();
    const planner = createHistoryPlanner(store, { maxSessions: 1 });
    const sims = [new SessionSim(planner, store, codec), new SessionSim(planner, store, codec)];
    const convs: ChatMessage[][] = [[{ role: "user", content: "one" }], [{ role: "user", content: "two" }]];
    for (let t = 0; t < 4; t++) {
      for (const i of [0, 1]) {
        const sim = sims[i]!;
        const { record } = sim.call(echo(convs[i]!), TOOLS, { toolCalls: [{ name: "run", arguments: { cmd: `step ${t}` } }] });
        convs[i] = [...convs[i]!, echo(record.response!), ...toolResults(record.response!, () => "ok")];
      }
    }
    for (const sim of sims) expectTokenExact(sim);
  });

  it("answers a retried request with the same prompt as a sibling of the first try", () => {
    const store = new MemoryStore();
    const planner = createHistoryPlanner(store);
    const sim = new SessionSim(planner, store, codec);
    const first = sim.call([{ role: "user", content: "hi" }], TOOLS, { content: "hello" }).record;
    const next: ChatMessage[] = [{ role: "user", content: "hi" }, echo(first.response!), { role: "user", content: "again" }];
    const x = sim.call(echo(next), TOOLS, { content: "a malformed answer" }).record;
    const retry = sim.call(echo(next), TOOLS, { content: "a better answer" }).plan;
    expect(retry.promptTokens).toEqual(x.promptTokens);
    expect(retry.parentCallId).toBe(first.callId);
    expect(retry.parentCallId).toBe(x.parentCallId);
    expect(retry.reusedPrefixTokens).toBe(x.reusedPrefixTokens);
    expect(retry.break).toBeNull();
    // The retry of the session's first call is a root again.
    const again = planner.plan(sim.sessionId, { messages: [{ role: "user", content: "hi" }], tools: TOOLS }, codec);
    expect(again).toEqual({ promptTokens: first.promptTokens, parentCallId: null, reusedPrefixTokens: 0, break: null, realigned: [] });
  });

  it("branches token-exactly from an older call, not only from the latest ones", () => {
    const store = new MemoryStore();
    const planner = createHistoryPlanner(store);
    const sim = new SessionSim(planner, store, codec);
    const m1: ChatMessage[] = [{ role: "user", content: "start" }];
    const c1 = sim.call(echo(m1), TOOLS, { content: "first answer" }).record;
    let m: ChatMessage[] = [...m1, echo(c1.response!)];
    for (let t = 0; t < 4; t++) {
      const r = sim.call(echo([...m, { role: "user", content: `q${t}` }]), TOOLS, { content: `a${t}` }).record;
      m = [...r.messages, echo(r.response!)];
    }
    // The harness forks the conversation right after the first answer (e.g. a sub-task reusing the context).
    const { plan } = sim.call(echo([...m1, echo(c1.response!), { role: "user", content: "fork" }]), TOOLS, { content: "forked" });
    expect(plan.break).toBeNull();
    expect(plan.parentCallId).toBe(c1.callId);
    expect(plan.promptTokens.slice(0, plan.reusedPrefixTokens)).toEqual([...c1.promptTokens, ...c1.completionTokens]);
  });

  it("continues from the regenerated answer the harness kept, not the first try", () => {
    const store = new MemoryStore();
    const planner = createHistoryPlanner(store);
    const sim = new SessionSim(planner, store, codec);
    const ask: ChatMessage[] = [{ role: "user", content: "hi" }];
    sim.call(echo(ask), TOOLS, { content: "first try" });
    const second = sim.call(echo(ask), TOOLS, { content: "second try" }).record;
    const { plan } = sim.call([...echo(ask), echo(second.response!), { role: "user", content: "ok" }], TOOLS, { content: "done" });
    expect(plan.parentCallId).toBe(second.callId);
    expect(plan.promptTokens.slice(0, plan.reusedPrefixTokens)).toEqual([...second.promptTokens, ...second.completionTokens]);
  });
});
