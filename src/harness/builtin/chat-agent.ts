#!/usr/bin/env node
/**
 * `chat-agent`: a single-agent harness on OpenAI Chat Completions (streamed), in the style of Qwen Code / OpenClaw's
 * chat mode. Tools: `run` (shell) and `write` (file). Loop: call the model, run every tool call of the turn (parallel
 * calls allowed), append results, repeat until a turn has no tool calls or the turn budget is spent.
 */
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { openaiBaseUrl, readHarnessEnv } from "./env.js";
import { finish, parseArgs, runShell, str, writeWorkspaceFile } from "./tools.js";
import { EngineError } from "../../core/errors.js";

const SYSTEM = "You are a terminal agent. Use run to execute shell commands and write to create files. Work in the current directory. Reply with a short final answer when done.";

const TOOLS: ChatCompletionTool[] = [
  {
    type: "function",
    function: { name: "run", description: "Run a shell command", parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } },
  },
  {
    type: "function",
    function: { name: "write", description: "Write a file", parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] } },
  },
];

async function callTool(name: string, argsText: string, timeoutMs: number): Promise<string> {
  const args = parseArgs(argsText);
  if (name === "run") {
    const command = str(args.command);
    if (!command) return "error: run needs a command";
    const r = await runShell(command, timeoutMs);
    return `exit ${r.exitCode}\n${r.output}`;
  }
  if (name === "write") {
    const path = str(args.path);
    const content = str(args.content);
    if (!path || content === undefined) return "error: write needs path and content";
    return writeWorkspaceFile(path, content);
  }
  return `error: unknown tool ${name}`;
}

async function main(): Promise<void> {
  const env = readHarnessEnv();
  const client = new OpenAI({ baseURL: openaiBaseUrl(env), apiKey: env.HARNESSRL_API_KEY, maxRetries: 2 });
  const messages: ChatCompletionMessageParam[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: env.HARNESSRL_PROMPT },
  ];
  for (let turn = 1; turn <= env.HARNESSRL_MAX_TURNS; turn++) {
    const stream = client.chat.completions.stream({ model: env.HARNESSRL_MODEL, messages, tools: TOOLS, max_tokens: env.HARNESSRL_MAX_TOKENS });
    const completion = await stream.finalChatCompletion();
    const msg = completion.choices[0]?.message;
    if (!msg) throw new EngineError("invalid_engine_response", "the model's answer has no message");
    const toolCalls = (msg.tool_calls ?? []).filter((c) => c.type === "function");
    messages.push({ role: "assistant", content: msg.content ?? "", ...(toolCalls.length ? { tool_calls: toolCalls } : {}) });
    if (toolCalls.length === 0) {
      finish({ turns: turn, status: "done", final: msg.content ?? "" });
      return;
    }
    const results = await Promise.all(toolCalls.map((c) => callTool(c.function.name, c.function.arguments, env.HARNESSRL_TOOL_TIMEOUT_MS)));
    toolCalls.forEach((c, i) => messages.push({ role: "tool", tool_call_id: c.id, content: results[i] ?? "" }));
  }
  finish({ turns: env.HARNESSRL_MAX_TURNS, status: "max_turns" });
}

main().catch((e: unknown) => {
  finish({ turns: 0, status: "error", error: e instanceof Error ? e.message : String(e) });
  process.exitCode = 1;
});
