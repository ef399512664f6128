import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite.js";
import { expectTokenExactChain } from "./helpers.js";
import { killChild } from "../../src/core/kill-child.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const agent = join(root, "test", "proxy", "fixtures", "echo-agent.mjs");
const ADMIN = "test-admin-token";

interface Running {
  child: ChildProcessWithoutNullStreams;
  openai: string;
  output: () => string;
}

/** Starts `harnessrl proxy` as users do (compiled CLI) and waits for the base URLs it prints. */
async function startCli(db: string): Promise<Running> {
  const child = spawn(process.execPath, [join(root, "dist", "cli", "main.js"), "proxy", "--engine", `scripted:${agent}`, "--port", "0", "--db", db, "--admin-token", ADMIN, "--verbose"], { cwd: root });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`proxy did not start:\n${out}`)), 30_000);
    const check = (): void => {
      const m = /OpenAI base URL[^:]*:\s*(http:\/\/\S+\/v1)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on("data", check);
    child.on("exit", (code) => reject(new Error(`proxy exited with ${String(code)}:\n${out}`)));
  });
  return { child, openai: url, output: () => out };
}

async function killed(child: ChildProcessWithoutNullStreams, signal: NodeJS.Signals): Promise<void> {
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  killChild(child, signal);
  await exited;
}

describe("harnessrl proxy CLI: kill -9 and restart on the same database", () => {
  const dir = mkdtempSync(join(tmpdir(), "hrl-proxy-cli-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps every answered call and stays token-exact across the restart", async () => {
    const db = join(dir, "calls.sqlite");
    const first = await startCli(db);
    expect(first.output()).toContain("Anthropic base URL");
    const issued = await fetch(first.openai.replace(/\/v1$/, "/admin/sessions"), {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ rolloutId: "r-kill", harness: "test" }),
    });
    const { apiKey, sessionId } = (await issued.json()) as { apiKey: string; sessionId: string };
    const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: "function", function: { name: "note", parameters: { type: "object", properties: { text: { type: "string" } } } } }];
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "user", content: "remember milk" }];

    const turn = async (baseURL: string, stream: boolean): Promise<void> => {
      const client = new OpenAI({ apiKey, baseURL, maxRetries: 0 });
      const r = stream
        ? await client.chat.completions.stream({ model: "scripted", messages, tools }).finalChatCompletion()
        : await client.chat.completions.create({ model: "scripted", messages, tools });
      const msg = r.choices[0]?.message;
      messages.push({ role: "assistant", content: msg?.content ?? null, ...(msg?.tool_calls ? { tool_calls: msg.tool_calls } : {}) });
      const call = msg?.tool_calls?.[0];
      if (call) messages.push({ role: "tool", tool_call_id: call.id, content: "ok" });
      else messages.push({ role: "user", content: "remember eggs" });
    };
    await turn(first.openai, false);
    await turn(first.openai, true);
    await turn(first.openai, false);
    // --verbose prints one line per recorded call.
    expect(first.output()).toMatch(/session=\S+ openai-chat ok stop prompt=\d+ reused=0 completion=\d+ tools=note/);
    expect(first.output()).toMatch(/openai-chat\+sse ok stop prompt=\d+ reused=[1-9]\d* completion=\d+/);
    await killed(first.child, "SIGKILL");

    const second = await startCli(db);
    try {
      const status = await fetch(second.openai.replace(/\/v1$/, `/admin/sessions/${sessionId}`), { headers: { authorization: `Bearer ${ADMIN}` } });
      expect(await status.json()).toMatchObject({ records: 3, inFlight: 0 });
      // The credential issued before the crash still works; history continues token-exactly.
      await turn(second.openai, true);
      await turn(second.openai, false);
    } finally {
      await killed(second.child, "SIGTERM");
    }
    const store = new SqliteStore(db);
    try {
      const records = store.listCalls({ sessionId });
      expect(records).toHaveLength(5);
      expect(records.every((r) => r.status === "ok" && r.rolloutId === "r-kill")).toBe(true);
      expectTokenExactChain(records);
    } finally {
      store.close();
    }
  });
});
