#!/usr/bin/env node
/**
 * `resp-agent`: a single-agent harness on OpenAI Responses (streamed, `store: false`), in the style of Codex CLI.
 * Tools: `shell` taking an argv array and `apply_write` taking path + text. The whole item history (messages,
 * function calls, outputs) is resent each turn, as Codex does.
 */
import OpenAI from "openai";
import type { FunctionTool, ResponseInputItem } from "openai/resources/responses/responses";
import { openaiBaseUrl, readHarnessEnv } from "./env.js";
import { finish, parseArgs, runArgv, str, writeWorkspaceFile } from "./tools.js";

const INSTRUCTIONS = "You are a coding agent. Call shell with an argv list to run programs and apply_write to write files. Finish with a one-line summary.";

const TOOLS: FunctionTool[] = [
  {
    type: "function",
    name: "shell",
    description: "Run a program",
    strict: false,
    parameters: { type: "object", properties: { cmd: { type: "array", items: { type: "string" } } }, required: ["cmd"] },
  },
  {
    type: "function",
    name: "apply_write",
    description: "Write text to a file",
    strict: false,
    parameters: { type: "object", properties: { path: { type: "string" }, text: { type: "string" } }, required: ["path", "text"] },
  },
];

async function callTool(name: string, argsText: string, timeoutMs: number): Promise<string> {
  const args = parseArgs(argsText);
  if (name === "shell") {
    const cmd = Array.isArray(args.cmd) && args.cmd.every((a) => typeof a === "string") ? (args.cmd as string[]) : undefined;
    if (!cmd || cmd.length === 0) return "error: shell needs cmd, a list of strings";
    const r = await runArgv(cmd, timeoutMs);
    return JSON.stringify({ exit_code: r.exitCode, output: r.output });
  }
  if (name === "apply_write") {
    const path = str(args.path);
    const text = str(args.text);
    if (!path || text === undefined) return "error: apply_write needs path and text";
    return writeWorkspaceFile(path, text);
  }
  return `error: unsupported tool ${name}`;
}

async function main(): Promise<void> {
  const env = readHarnessEnv();
  const client = new OpenAI({ baseURL: openaiBaseUrl(env), apiKey: env.HARNESSRL_API_KEY, maxRetries: 2 });
  const input: ResponseInputItem[] = [{ type: "message", role: "user", content: [{ type: "input_text", text: env.HARNESSRL_PROMPT }] }];
  for (let turn = 1; turn <= env.HARNESSRL_MAX_TURNS; turn++) {
    const stream = client.responses.stream({ model: env.HARNESSRL_MODEL, instructions: INSTRUCTIONS, input, tools: TOOLS, store: false, max_output_tokens: env.HARNESSRL_MAX_TOKENS });
    const response = await stream.finalResponse();
    const calls: { call_id: string; name: string; arguments: string }[] = [];
    for (const item of response.output) {
      if (item.type === "message") {
        const text = item.content.map((c) => (c.type === "output_text" ? c.text : "")).join("");
        input.push({ type: "message", role: "assistant", content: text });
      } else if (item.type === "function_call") {
        input.push({ type: "function_call", call_id: item.call_id, name: item.name, arguments: item.arguments });
        calls.push(item);
      }
    }
    if (calls.length === 0) {
      finish({ turns: turn, status: "done", final: response.output_text });
      return;
    }
    for (const call of calls) {
      const output = await callTool(call.name, call.arguments, env.HARNESSRL_TOOL_TIMEOUT_MS);
      input.push({ type: "function_call_output", call_id: call.call_id, output });
    }
  }
  finish({ turns: env.HARNESSRL_MAX_TURNS, status: "max_turns" });
}

main().catch((e: unknown) => {
  finish({ turns: 0, status: "error", error: e instanceof Error ? e.message : String(e) });
  process.exitCode = 1;
});
