import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite.js";
import { killChild } from "../../src/core/kill-child.js";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "..", "dist");
const dir = mkdtempSync(join(tmpdir(), "hrl-kill-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("SqliteStore durability", () => {
  it("keeps every record whose insert was acknowledged when the writer is SIGKILLed mid-stream", async () => {
    const dbPath = join(dir, "calls.sqlite");
    const child = spawn(process.execPath, [join(here, "fixtures", "insert-until-killed.mjs"), dist, dbPath], { stdio: ["ignore", "pipe", "pipe"] });
    const acknowledged: string[] = [];
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    let buffered = "";
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (d: Buffer) => {
        buffered += d.toString();
        const lines = buffered.split("\n");
        buffered = lines.pop() ?? "";
        for (const l of lines) if (l.startsWith("ok ")) acknowledged.push(l.slice(3));
        if (acknowledged.length >= 150) {
          killChild(child, "SIGKILL");
          resolve();
        }
      });
      child.on("exit", () => reject(new Error(`writer exited early: ${stderr}`)));
    });
    expect(await exited).toBe("SIGKILL");

    const store = new SqliteStore(dbPath);
    try {
      const stored = store.countCalls();
      expect(stored).toBeGreaterThanOrEqual(acknowledged.length);
      for (const callId of acknowledged) {
        const i = Number(callId.slice(5));
        const r = store.getCall(callId);
        expect(r, callId).not.toBeNull();
        expect(r!.promptTokens).toEqual(Array.from({ length: 4096 }, (_, j) => (i * 31 + j) % 265));
        expect(r!.completionTokens).toEqual(Array.from({ length: 32 }, (_, j) => (i + j) % 265));
        expect(r!.logprobs).toEqual(r!.completionTokens.map((_, j) => Math.fround(-(i + j) / 1000)));
        expect(r!.rawRequest).toEqual({ i, text: "x".repeat(2000) });
        expect(r!.messages).toEqual([{ role: "user", content: `message ${i}` }]);
        expect(r!.policyVersion).toBe(i);
      }
    } finally {
      store.close();
    }
  });
});
