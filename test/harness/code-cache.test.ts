import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { codeCachePath } from "../../src/harness/builtin/code-cache-files.js";
import { BUILTIN_NODE_FLAGS_ENV } from "../../src/harness/builtin/definitions.js";
import { getHarness } from "../../src/harness/registry.js";
import { warmUpReply } from "../../src/rollout/code-cache.js";
import type { ScriptRequest } from "../../src/engine/scripted/script-types.js";
import { REPO_ROOT, tempRoot } from "../sandbox/helpers.js";

const BUNDLES = join(REPO_ROOT, "dist", "harness", "builtin", "bundles");
const STARTER = join(BUNDLES, "cached-start.cjs");
const NAMES = ["chat-agent", "claw-agent", "resp-agent", "central-agent"];
/** A launch context for the built-in harnesses (only their argv is used here). */
const LAUNCH = { prompt: "p", proxyOrigin: "http://127.0.0.1:1", apiKey: "k", model: "m", workspace: "/workspace", home: "/home/sandbox", maxTurns: 1, maxTokens: 1 };

/** Runs `argv` with a clean environment, as a sandbox does, plus `env`. */
function run(argv: readonly string[], env: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const [cmd, ...args] = argv;
  const r = spawnSync(cmd ?? "", args, { env: { PATH: "/usr/bin:/bin", ...env }, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function request(tools: string[], last: "user" | "tool"): ScriptRequest {
  return { sessionId: "s", callId: "c", messages: [{ role: "user", content: "go" }, ...(last === "tool" ? [{ role: "tool" as const, content: "", toolCallId: "t" }] : [])], tools: tools.map((name) => ({ name, description: "", parameters: {} })) };
}

describe("built-in harnesses start from a V8 code cache written at build time", () => {
  const root = tempRoot("code-cache");
  afterAll(() => root.remove());

  it("the build wrote a cache for every built-in harness, and V8 accepts it under the harness's own launch command", () => {
    for (const name of NAMES) {
      const argv = getHarness(name).launch(LAUNCH).argv;
      expect(argv).toContain(STARTER);
      expect(existsSync(codeCachePath(join(BUNDLES, `${name}.cjs`)))).toBe(true);
      expect(run(argv, { HARNESSRL_CODE_CACHE: "check" }).stdout.trim(), name).toBe("accepted");
    }
  });

  it("under other Node flags V8 rejects the cache (it checks them), and the harness then compiles from source and runs", () => {
    const saved = process.env[BUILTIN_NODE_FLAGS_ENV];
    try {
      process.env[BUILTIN_NODE_FLAGS_ENV] = "--liftoff-only --no-opt";
      const argv = getHarness("chat-agent").launch(LAUNCH).argv;
      expect(run(argv, { HARNESSRL_CODE_CACHE: "check" }).stdout.trim()).toBe("rejected");
      // Started for real: it gets as far as its environment check, as it does without a cache.
      const r = run(argv);
      expect(r.stderr).toContain("harness: bad environment");
      expect(r.code).toBe(2);
    } finally {
      if (saved === undefined) delete process.env[BUILTIN_NODE_FLAGS_ENV];
      else process.env[BUILTIN_NODE_FLAGS_ENV] = saved;
    }
  });

  it("a damaged cache is rejected, a missing one is absent, and either way the bundle runs as if node had started it directly", () => {
    const bundle = join(root.path, "probe.cjs");
    writeFileSync(bundle, "#!/usr/bin/env node\nprocess.stdout.write(JSON.stringify({ argv: process.argv.slice(1), filename: __filename, dirname: __dirname, exportsIsThis: this === module.exports, fs: typeof require('node:fs').readFileSync }));\nprocess.exitCode = 3;\n");
    expect(run([process.execPath, STARTER, bundle], { HARNESSRL_CODE_CACHE: "check" }).stdout.trim()).toBe("absent");
    writeFileSync(codeCachePath(bundle), "not a V8 code cache, just bytes");
    expect(run([process.execPath, STARTER, bundle], { HARNESSRL_CODE_CACHE: "check" }).stdout.trim()).toBe("rejected");
    const r = run([process.execPath, STARTER, bundle, "a", "b"]);
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout)).toEqual({ argv: [bundle, "a", "b"], filename: bundle, dirname: root.path, exportsIsThis: true, fs: "function" });
  });

  it("write mode stores the cache of what ran, which the next start accepts; a source change makes V8 reject it", () => {
    const bundle = join(root.path, "grow.cjs");
    writeFileSync(bundle, "function f(n) { return n < 2 ? n : f(n - 1) + f(n - 2); }\nprocess.stdout.write(String(f(20)));\n");
    const made = run([process.execPath, STARTER, bundle], { HARNESSRL_CODE_CACHE: `write:${codeCachePath(bundle)}` });
    expect(made.stdout).toBe("6765");
    expect(run([process.execPath, STARTER, bundle], { HARNESSRL_CODE_CACHE: "check" }).stdout.trim()).toBe("accepted");
    expect(run([process.execPath, STARTER, bundle]).stdout).toBe("6765");
    const other = join(root.path, "other.cjs");
    writeFileSync(other, "process.stdout.write('changed source, same cache file');\n");
    copyFileSync(codeCachePath(bundle), codeCachePath(other));
    expect(run([process.execPath, STARTER, other], { HARNESSRL_CODE_CACHE: "check" }).stdout.trim()).toBe("rejected");
    expect(run([process.execPath, STARTER, other]).stdout).toBe("changed source, same cache file");
  });

  it("refuses to start anything but a .cjs bundle", () => {
    const r = run([process.execPath, STARTER, join(root.path, "x.js")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("usage: node cached-start.cjs <bundle.cjs>");
  });

  it("the warm-up model calls one shell tool the harness offers, then answers once a tool result is in", () => {
    const central = getHarness("central-agent").oracle;
    const chat = getHarness("chat-agent").oracle;
    if (!central || !chat) throw new Error("built-in harnesses have oracle profiles");
    expect(warmUpReply(chat, request(["run", "write"], "user"))).toEqual({ toolCalls: [{ name: "run", arguments: { command: "true" } }] });
    expect(warmUpReply(chat, request(["run", "write"], "tool"))).toEqual({ content: "Done." });
    // The central agent delegates to a worker, whose own session offers `sh`.
    expect(warmUpReply(central, request(["researcher", "worker"], "user"))).toEqual({ toolCalls: [{ name: "worker", arguments: { task: "true" } }] });
    expect(warmUpReply(central, request(["sh"], "user"))).toEqual({ toolCalls: [{ name: "sh", arguments: { cmd: "true" } }] });
    expect(warmUpReply(chat, request(["unrelated"], "user"))).toEqual({ content: "Done." });
  });
});
