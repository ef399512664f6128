import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";

/**
 * Runs `body` (a module that has `killChild` and `spawn` in scope) as a process in a session of its own, so that a
 * signal to "our own process group" reaches only it. Returns how it ended and what it printed.
 */
async function inOwnSession(body: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  const dir = mkdtempSync(join(tmpdir(), "hrl-kill-child-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const compiled = new URL("../../dist/core/kill-child.js", import.meta.url).pathname;
  const script = join(dir, "scenario.mjs");
  writeFileSync(script, `import { spawn } from "node:child_process";\nimport { killChild } from ${JSON.stringify(compiled)};\n${body}`);
  const child = spawn(process.execPath, [script], { detached: true, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  return new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal, out })));
}

describe("killChild", () => {
  it("signals nothing for a child whose spawn failed (a missing cwd), even in the tick before Node reports the failure", async () => {
    // child.kill() here would be kill(0, SIGKILL): the scenario's own process group, i.e. itself.
    const r = await inOwnSession(`
const child = spawn("/bin/sh", ["-c", "true"], { cwd: "/nonexistent-harnessrl-dir", stdio: "ignore" });
const errors = [];
child.on("error", (e) => errors.push(e.code));
const sent = killChild(child, "SIGKILL");
await new Promise((r) => setTimeout(r, 200));
console.log(JSON.stringify({ sent, errors }));
`);
    expect({ code: r.code, signal: r.signal }, "the scenario was signalled: the kill reached its own process group").toEqual({ code: 0, signal: null });
    expect(JSON.parse(r.out)).toEqual({ sent: false, errors: ["ENOENT"] });
  });

  it("signals a running child, and nothing once it has exited", async () => {
    const r = await inOwnSession(`
const child = spawn("sleep", ["30"], { stdio: "ignore" });
const ended = new Promise((r) => child.on("exit", (code, signal) => r(signal)));
const first = killChild(child, "SIGTERM");
const signal = await ended;
const again = killChild(child, "SIGKILL");
console.log(JSON.stringify({ first, signal, again }));
`);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ first: true, signal: "SIGTERM", again: false });
  });
});
