import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, runCli } from "../setup/cli.js";

/** A user error is one line on stderr (no stack trace, no usage dump), its code in brackets, and exit code 2. */
function expectOneLine(r: { code: number | null; stderr: string }, code: string, mentions: RegExp): void {
  const text = r.stderr.trim();
  expect(text.split("\n"), text).toHaveLength(1);
  expect(text).not.toMatch(/\n\s+at /);
  expect(text).toContain(`[${code}]`);
  expect(text).toMatch(mentions);
  expect(r.code).toBe(2);
}

describe("CLI: careless input gets one line and a non-zero exit", () => {
  let dir: string;
  let busy: Server;
  let busyPort: number;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "hrl-cli-errors-"));
    writeFileSync(join(dir, "agent.mjs"), 'export default () => ({ content: "hi" });\n');
    writeFileSync(join(dir, "notes.sqlite"), "not a database\n");
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    busyPort = (busy.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => busy.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  const proxy = (...extra: string[]): string[] => ["proxy", "--engine", `scripted:${join(dir, "agent.mjs")}`, "--db", "memory", ...extra];

  it("an unknown preset in a config fails --check, naming the key", async () => {
    const config = readFileSync(join(REPO_ROOT, "configs", "quickstart.yaml"), "utf8").replace(/preset: [\w-]+/, "preset: tiny-nope");
    const path = join(dir, "bad-preset.yaml");
    writeFileSync(path, config);
    const r = await runCli(["train", "--check", "--config", path]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/model\.preset: unknown model preset "tiny-nope"/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("a port in use", async () => expectOneLine(await runCli(proxy("--port", String(busyPort))), "listen_failed", /already in use/));

  it("a host that does not exist", async () => expectOneLine(await runCli(proxy("--port", "0", "--host", "999.1.1.1")), "listen_failed", /999\.1\.1\.1/));

  it("a --db that is not SQLite", async () => expectOneLine(await runCli(proxy("--port", "0", "--db", join(dir, "notes.sqlite"))), "store_not_harnessrl", /not a SQLite database/));

  it("a negative number for a numeric option says what the option needs, not 'ambiguous' plus the usage", async () =>
    expectOneLine(await runCli(proxy("--port", "-5")), "invalid_arguments", /--port must be a port number, got "-5"/));

  it("an unknown option: one line and a pointer to --help", async () => expectOneLine(await runCli(proxy("--colour", "red")), "invalid_arguments", /harnessrl proxy --help/));

  it.each([
    ["rollout", []],
    ["eval", ["--cluster", "redis://:x@127.0.0.1:1"]],
  ])("%s --memory-mb out of range, before any work (with --cluster: before the queue is reached)", async (command, extra) =>
    expectOneLine(await runCli([command, "--tasks", "arith:test?n=1", "--out", join(dir, `mem-${command}`), "--memory-mb", "8", ...extra]), "invalid_arguments", /--memory-mb must be an integer from 16 to 1048576, got "8"/));

  it.each([
    ["rollout", []],
    ["eval", ["--cluster", "redis://:x@127.0.0.1:1"]],
  ])("%s --seeds with a space in it, before any work", async (command, extra) =>
    expectOneLine(await runCli([command, "--tasks", "arith:test?n=1", "--out", join(dir, `seeds-${command}`), "--seeds", "two words", ...extra]), "invalid_arguments", /--seeds must be 1 to 200 printable characters without spaces/));

  it("eval with an unknown sandbox backend exits (it used to print the error and hang)", async () => {
    const t0 = Date.now();
    const r = await runCli(["eval", "--engine", `scripted:${join(dir, "agent.mjs")}`, "--tasks", "calcrun:test", "--harness", "chat-agent", "--samples", "1", "--sandbox", "docker"]);
    expectOneLine(r, "unknown_sandbox_backend", /docker/);
    expect(Date.now() - t0).toBeLessThan(45_000);
  });
});
