/**
 * Writes the V8 code cache of each built-in harness bundle (run by `npm run build`, scripts/bundle.mjs).
 *
 * A cache made right after compiling holds only what V8 compiles eagerly, and measured no faster than none (−4.7 ±
 * 5.0 ms); one written after a whole run holds every function the run compiled (−18.5 ± 3.4 ms of ~153 per
 * chat-agent process; docs/harnesses.md). So each harness runs here once, exactly as a sandbox starts it (its launch
 * argv: the same Node binary and flags, which V8 checks before it accepts a cache), for two turns against a scripted
 * model behind the real proxy: a tool call, then a final answer. Outside any sandbox: the only command its tools run
 * is `true`, in a temporary workspace. Each cache is then checked the way a sandbox will load it.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InfraError } from "../core/errors.js";
import { createScriptedEngine } from "../engine/scripted/scripted-engine.js";
import type { ScriptReply, ScriptRequest } from "../engine/scripted/script-types.js";
import { builtinHarnesses, builtinResult, CODE_CACHE_ENV } from "../harness/builtin/definitions.js";
import { CODE_CACHE_MODE_ENV, codeCachePath } from "../harness/builtin/code-cache-files.js";
import type { HarnessDefinition, OracleProfile } from "../harness/types.js";
import { createHistoryPlanner } from "../history/planner.js";
import { ProxyServer } from "../proxy/server.js";
import { runProcess } from "../tasks/local-run.js";
import { MemoryStore } from "../store/memory.js";

export interface CodeCacheResult {
  harness: string;
  cache: string;
  bytes: number;
  /** What the harness's launch command reports for the cache it will load: `accepted` is the only good answer. */
  check: string;
}

const RUN_TIMEOUT_MS = 60_000;

/** The scripted model: one shell tool call the harness offers (`true`), then a final answer once a tool result is in. */
export function warmUpReply(oracle: OracleProfile, request: ScriptRequest): ScriptReply {
  if (request.messages.at(-1)?.role === "tool") return { content: "Done." };
  const offered = new Set(request.tools.map((t) => t.name));
  const call = [oracle.shell("true"), oracle.subShell?.("true")].find((c) => c !== undefined && offered.has(c.name));
  return call ? { toolCalls: [call] } : { content: "Done." };
}

async function warmUp(def: HarnessDefinition, proxy: ProxyServer, origin: string): Promise<CodeCacheResult> {
  const dir = mkdtempSync(join(tmpdir(), `harnessrl-code-cache-${def.name}-`));
  try {
    const session = proxy.issueSession({ harness: def.name });
    const plan = def.launch({ prompt: "Run true, then say Done.", proxyOrigin: origin, apiKey: session.apiKey, model: "policy", workspace: dir, home: dir, maxTurns: 2, maxTokens: 64 });
    const starter = plan.argv.findIndex((a) => a.endsWith("/cached-start.cjs"));
    const bundle = plan.argv.at(-1) ?? "";
    if (starter < 0) throw new InfraError("code_cache_failed", `${def.name} does not start through cached-start.cjs: ${plan.argv.join(" ")}`);
    const cache = codeCachePath(bundle);
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, ...plan.env };
    const run = await runProcess(plan.argv, dir, RUN_TIMEOUT_MS, { ...env, [CODE_CACHE_MODE_ENV]: `write:${cache}` });
    const result = builtinResult(run.stdout);
    if (run.code !== 0 || result?.status !== "done" || !existsSync(cache)) {
      throw new InfraError("code_cache_failed", `the warm-up run of ${def.name} failed (exit ${run.code}, result ${JSON.stringify(result)}): ${run.stderr.slice(-2000)}`);
    }
    const check = (await runProcess(plan.argv, dir, RUN_TIMEOUT_MS, { ...env, [CODE_CACHE_MODE_ENV]: "check" })).stdout.trim();
    return { harness: def.name, cache, bytes: statSync(cache).size, check };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Writes `<bundle>.v8cache` for every built-in harness (`names`: some of them), each from a warm-up run of its launch
 * command, which starts through cached-start.cjs once the build has bundled it. Throws if a warm-up run fails.
 */
export async function writeBuiltinCodeCaches(names?: readonly string[]): Promise<CodeCacheResult[]> {
  if (process.env[CODE_CACHE_ENV] === "0") return [];
  const defs = builtinHarnesses.filter((d) => !names || names.includes(d.name));
  const byHarness = new Map(defs.map((d) => [d.name, d]));
  const engine = createScriptedEngine((req) => {
    const def = req.harness ? byHarness.get(req.harness) : undefined;
    return def?.oracle ? warmUpReply(def.oracle, req) : { content: "Done." };
  }, { modelId: "policy" });
  const store = new MemoryStore();
  const proxy = new ProxyServer({ engine, store, planner: createHistoryPlanner(store), modelAliases: [], onError: () => undefined });
  try {
    await proxy.listen(0, "127.0.0.1");
    const origin = `http://127.0.0.1:${proxy.port}`;
    const results: CodeCacheResult[] = [];
    for (const def of defs) results.push(await warmUp(def, proxy, origin));
    return results;
  } finally {
    await proxy.close();
    await engine.close();
    store.close();
  }
}
