import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { createScriptedEngine, type ScriptFunction, type ScriptedEngineOptions } from "../../src/engine/scripted/index.js";
import type { SamplingEngine } from "../../src/engine/types.js";
import { createHistoryPlanner } from "../../src/history/index.js";
import { ProxyServer, type ProxyOptions, type ProxyUrls } from "../../src/proxy/index.js";
import type { CallRecord } from "../../src/icr/records.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import type { Store } from "../../src/store/types.js";

export interface TestProxy {
  server: ProxyServer;
  urls: ProxyUrls;
  store: Store;
  engine: SamplingEngine;
  /** Issues a fresh session; returns its API key. */
  session(harness?: string): { sessionId: string; apiKey: string };
  openai(apiKey: string): OpenAI;
  anthropic(apiKey: string, viaBearer?: boolean): Anthropic;
  calls(sessionId: string): CallRecord[];
  close(): Promise<void>;
}

/** A real proxy on 127.0.0.1:0 with a real SQLite store; a scripted engine plays the model. */
export async function startProxy(
  script: ScriptFunction,
  options: { engine?: ScriptedEngineOptions; proxy?: Partial<ProxyOptions>; engineOverride?: SamplingEngine } = {},
): Promise<TestProxy> {
  const dir = mkdtempSync(join(tmpdir(), "hrl-proxy-"));
  const store = new SqliteStore(join(dir, "calls.sqlite"));
  const engine = options.engineOverride ?? createScriptedEngine(script, { modelId: "policy", ...options.engine });
  const errors: unknown[] = [];
  const server = new ProxyServer({ engine, store, planner: createHistoryPlanner(store), onError: (e) => errors.push(e), ...options.proxy });
  const urls = await server.listen(0, "127.0.0.1");
  return {
    server,
    urls,
    store,
    engine,
    session: (harness) => server.issueSession({ rolloutId: "r1", harness: harness ?? "test" }),
    openai: (apiKey) => new OpenAI({ apiKey, baseURL: urls.openai, maxRetries: 0 }),
    anthropic: (apiKey, viaBearer = false) =>
      viaBearer ? new Anthropic({ authToken: apiKey, apiKey: null, baseURL: urls.anthropic, maxRetries: 0 }) : new Anthropic({ apiKey, baseURL: urls.anthropic, maxRetries: 0 }),
    calls: (sessionId) => store.listCalls({ sessionId }),
    close: async () => {
      await server.close();
      await engine.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Call N+1's prompt starts with call N's prompt + completion, token for token, and names N as its parent. */
export function expectTokenExactChain(records: readonly CallRecord[]): void {
  for (let i = 1; i < records.length; i++) {
    const prev = records[i - 1] as CallRecord;
    const cur = records[i] as CallRecord;
    const prefix = [...prev.promptTokens, ...prev.completionTokens];
    const head = cur.promptTokens.slice(0, prefix.length);
    if (head.length !== prefix.length || head.some((t, k) => t !== prefix[k])) {
      throw new Error(`call ${i} does not extend call ${i - 1} token-exactly (break: ${JSON.stringify(cur.break)})`);
    }
    if (cur.parentCallId !== prev.callId) throw new Error(`call ${i}'s parent is ${cur.parentCallId}, expected ${prev.callId}`);
    if (cur.break !== null) throw new Error(`call ${i} has a break: ${JSON.stringify(cur.break)}`);
    if (cur.reusedPrefixTokens < prefix.length) throw new Error(`call ${i} reused ${cur.reusedPrefixTokens} tokens, expected ≥ ${prefix.length}`);
  }
}

/** The weather agent the protocol tests drive: tool calls on request, then a summary of the tool results. */
export const weatherAgent: ScriptFunction = (req) => {
  const last = req.messages.at(-1);
  if (!last) return { content: "empty" };
  if (last.role === "tool") {
    const results = [];
    for (let i = req.messages.length - 1; i >= 0 && req.messages[i]?.role === "tool"; i--) results.unshift(req.messages[i]?.content);
    return { content: `Results: ${results.join(" | ")}` };
  }
  const text = last.content;
  if (text.includes("parallel")) {
    return { content: "Checking both cities.", toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }, { name: "get_weather", arguments: { city: "Tokyo", unit: "C" } }] };
  }
  if (text.includes("weather")) return { toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }] };
  if (text.includes("patch")) return { content: "Patching.", toolCalls: [{ name: "apply_patch", arguments: { input: "*** Begin Patch\n*** End Patch" } }] };
  if (text.includes("think")) return { reasoning: "The user wants me to think. 2+2=4.", content: "The answer is 4." };
  return { content: `Echo: ${text} — ünïcødé ✓ 日本語 🎉` };
};

export const WEATHER_TOOL_SCHEMA = {
  type: "object",
  properties: { city: { type: "string" }, unit: { type: "string", enum: ["C", "F"] } },
  required: ["city"],
};
