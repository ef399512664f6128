#!/usr/bin/env node
/**
 * `claw-agent`: a single-agent harness on Anthropic Messages (streamed), in the style of Claude Code. Tools: `Bash`
 * and `Write` with Claude-style argument names. It compacts its context when the conversation grows past a budget:
 * earlier turns are replaced by one summary user message (the harness writes the summary itself), which the proxy
 * records as a `compaction` history break.
 */
import Anthropic from "@anthropic-ai/sdk";
import type { MessageParam, Tool, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import { readHarnessEnv } from "./env.js";
import { finish, runShell, str, writeWorkspaceFile } from "./tools.js";

const SYSTEM = "You are a coding agent in a workspace. Use Bash for commands and Write for files. Keep going until the task is done, then answer briefly.";

const TOOLS: Tool[] = [
  { name: "Bash", description: "Execute a bash command", input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } },
  { name: "Write", description: "Create or overwrite a file", input_schema: { type: "object", properties: { file_path: { type: "string" }, content: { type: "string" } }, required: ["file_path", "content"] } },
];

/** Compact when the serialised conversation exceeds this many characters (env HARNESSRL_COMPACT_CHARS). */
const COMPACT_CHARS = Number(process.env.HARNESSRL_COMPACT_CHARS ?? 1_000);

async function callTool(name: string, input: Record<string, unknown>, timeoutMs: number): Promise<string> {
  if (name === "Bash") {
    const command = str(input.command);
    if (!command) return "error: Bash needs command";
    const r = await runShell(command, timeoutMs);
    return r.exitCode === 0 ? r.output : `exit code ${r.exitCode}\n${r.output}`;
  }
  if (name === "Write") {
    const path = str(input.file_path);
    const content = str(input.content);
    if (!path || content === undefined) return "error: Write needs file_path and content";
    return writeWorkspaceFile(path, content);
  }
  return `error: no such tool ${name}`;
}

/** Keeps the last exchange (a tool call and its results); everything before it becomes one summary user turn. */
function compact(messages: MessageParam[], prompt: string, log: string[]): MessageParam[] {
  const tail = messages.slice(-2);
  const summary: MessageParam = { role: "user", content: `Task: ${prompt}\nDone so far:\n${log.map((l) => `- ${l}`).join("\n")}` };
  return [summary, ...tail];
}

async function main(): Promise<void> {
  const env = readHarnessEnv();
  const client = new Anthropic({ baseURL: env.HARNESSRL_BASE_URL, apiKey: env.HARNESSRL_API_KEY, maxRetries: 2 });
  let messages: MessageParam[] = [{ role: "user", content: env.HARNESSRL_PROMPT }];
  const log: string[] = [];
  for (let turn = 1; turn <= env.HARNESSRL_MAX_TURNS; turn++) {
    if (JSON.stringify(messages).length > COMPACT_CHARS && messages.length > 3) messages = compact(messages, env.HARNESSRL_PROMPT, log);
    const stream = client.messages.stream({ model: env.HARNESSRL_MODEL, system: SYSTEM, messages, tools: TOOLS, max_tokens: env.HARNESSRL_MAX_TOKENS });
    const reply = await stream.finalMessage();
    messages.push({ role: "assistant", content: reply.content });
    const uses = reply.content.filter((b) => b.type === "tool_use");
    if (uses.length === 0) {
      const text = reply.content.map((b) => (b.type === "text" ? b.text : "")).join("");
      finish({ turns: turn, status: "done", final: text });
      return;
    }
    const results: ToolResultBlockParam[] = [];
    for (const use of uses) {
      const input = use.input && typeof use.input === "object" ? (use.input as Record<string, unknown>) : {};
      const output = await callTool(use.name, input, env.HARNESSRL_TOOL_TIMEOUT_MS);
      log.push(`${use.name} ${JSON.stringify(input).slice(0, 120)} -> ${output.split("\n")[0]?.slice(0, 80) ?? ""}`);
      results.push({ type: "tool_result", tool_use_id: use.id, content: output });
    }
    messages.push({ role: "user", content: results });
  }
  finish({ turns: env.HARNESSRL_MAX_TURNS, status: "max_turns" });
}

main().catch((e: unknown) => {
  finish({ turns: 0, status: "error", error: e instanceof Error ? e.message : String(e) });
  process.exitCode = 1;
});
