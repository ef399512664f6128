#!/usr/bin/env node
/**
 * `central-agent`: the multi-agent harness (Harness-RL style). A central agent on OpenAI Chat Completions decides an
 * *action* — which sub-agent to call (`researcher` or `worker`) — and writes its *args* (the instruction). Each
 * sub-agent call opens its own agent conversation (its own proxy session, tagged with `x-harnessrl-agent-*` headers and
 * the id of the central call that spawned it) with a shell tool; several delegations in one turn run in parallel.
 */
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { openaiBaseUrl, readHarnessEnv, type HarnessEnv } from "./env.js";
import { finish, parseArgs, runShell, str } from "./tools.js";
import { EngineError } from "../../core/errors.js";

const CENTRAL_SYSTEM = "You coordinate sub-agents. Call researcher to look things up and worker to run commands or write files. Answer briefly when the task is complete.";
const SUB_SYSTEM = "You are a sub-agent with a shell. Use sh to run commands in the workspace. Reply with the result in one line.";

const CENTRAL_TOOLS: ChatCompletionTool[] = [
  { type: "function", function: { name: "researcher", description: "Ask a research sub-agent", parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] } } },
  { type: "function", function: { name: "worker", description: "Ask a worker sub-agent", parameters: { type: "object", properties: { task: { type: "string" } }, required: ["task"] } } },
];

const SUB_TOOLS: ChatCompletionTool[] = [
  { type: "function", function: { name: "sh", description: "Run a shell command", parameters: { type: "object", properties: { cmd: { type: "string" } }, required: ["cmd"] } } },
];

const SUB_MAX_TURNS = 4;
let subCounter = 0;

async function runSubAgent(client: OpenAI, env: HarnessEnv, role: "researcher" | "worker", instruction: string, parentCallId: string): Promise<string> {
  const agentId = `${role}-${++subCounter}`;
  const headers = { "x-harnessrl-agent-role": role, "x-harnessrl-agent-id": agentId, "x-harnessrl-parent-call": parentCallId };
  const messages: ChatCompletionMessageParam[] = [
    { role: "system", content: SUB_SYSTEM },
    { role: "user", content: instruction },
  ];
  for (let turn = 0; turn < SUB_MAX_TURNS; turn++) {
    const completion = await client.chat.completions.stream({ model: env.HARNESSRL_MODEL, messages, tools: SUB_TOOLS, max_tokens: env.HARNESSRL_MAX_TOKENS }, { headers }).finalChatCompletion();
    const msg = completion.choices[0]?.message;
    if (!msg) return "error: sub-agent got an empty reply";
    const calls = (msg.tool_calls ?? []).filter((c) => c.type === "function");
    messages.push({ role: "assistant", content: msg.content ?? "", ...(calls.length ? { tool_calls: calls } : {}) });
    if (calls.length === 0) return msg.content ?? "";
    for (const call of calls) {
      const cmd = str(parseArgs(call.function.arguments).cmd);
      const output = cmd ? (await runShell(cmd, env.HARNESSRL_TOOL_TIMEOUT_MS)).output : "error: sh needs cmd";
      messages.push({ role: "tool", tool_call_id: call.id, content: output });
    }
  }
  return "error: sub-agent ran out of turns";
}

async function main(): Promise<void> {
  const env = readHarnessEnv();
  const client = new OpenAI({ baseURL: openaiBaseUrl(env), apiKey: env.HARNESSRL_API_KEY, maxRetries: 2 });
  const centralHeaders = { "x-harnessrl-agent-role": "central", "x-harnessrl-agent-id": "central" };
  const messages: ChatCompletionMessageParam[] = [
    { role: "system", content: CENTRAL_SYSTEM },
    { role: "user", content: env.HARNESSRL_PROMPT },
  ];
  for (let turn = 1; turn <= env.HARNESSRL_MAX_TURNS; turn++) {
    const completion = await client.chat.completions.create({ model: env.HARNESSRL_MODEL, messages, tools: CENTRAL_TOOLS, max_tokens: env.HARNESSRL_MAX_TOKENS }, { headers: centralHeaders });
    const msg = completion.choices[0]?.message;
    if (!msg) throw new EngineError("invalid_engine_response", "the model's answer has no message");
    const calls = (msg.tool_calls ?? []).filter((c) => c.type === "function");
    messages.push({ role: "assistant", content: msg.content ?? "", ...(calls.length ? { tool_calls: calls } : {}) });
    if (calls.length === 0) {
      finish({ turns: turn, status: "done", final: msg.content ?? "" });
      return;
    }
    // Delegations of one turn run in parallel, each in its own sub-agent session.
    const results = await Promise.all(
      calls.map(async (call) => {
        const args = parseArgs(call.function.arguments);
        if (call.function.name === "researcher") {
          const query = str(args.query);
          return query ? runSubAgent(client, env, "researcher", query, completion.id) : "error: researcher needs query";
        }
        if (call.function.name === "worker") {
          const task = str(args.task);
          return task ? runSubAgent(client, env, "worker", task, completion.id) : "error: worker needs task";
        }
        return `error: unknown sub-agent ${call.function.name}`;
      }),
    );
    calls.forEach((c, i) => messages.push({ role: "tool", tool_call_id: c.id, content: results[i] ?? "" }));
  }
  finish({ turns: env.HARNESSRL_MAX_TURNS, status: "max_turns" });
}

main().catch((e: unknown) => {
  finish({ turns: 0, status: "error", error: e instanceof Error ? e.message : String(e) });
  process.exitCode = 1;
});
