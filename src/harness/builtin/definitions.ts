import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { InfraError } from "../../core/errors.js";
import type { Protocol } from "../../icr/records.js";
import { harnessrlEnv } from "../launch-env.js";
import { codeCachePath } from "./code-cache-files.js";
import { builtinMountSet } from "./mount-set.js";
import type { ExitInfo, HarnessDefinition, LaunchContext, LaunchPlan, OracleProfile } from "../types.js";

/**
 * The package root (the folder with package.json). Harnesses always run compiled, from dist/harness/builtin/ —
 * also when this module itself is loaded from src/ (tests).
 */
function findPackageRoot(start: string): string {
  let dir = start;
  while (!existsSync(join(dir, "package.json"))) {
    const up = dirname(dir);
    if (up === dir) return join(start, "..", "..", "..");
    dir = up;
  }
  return dir;
}

const packageRoot = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

/** The last `{"harnessrl_result": …}` line a built-in harness printed. */
export function builtinResult(stdout: string): { status: string; turns: number } | null {
  const lines = stdout.trim().split("\n").reverse();
  for (const line of lines) {
    if (!line.startsWith('{"harnessrl_result"')) continue;
    try {
      const v = JSON.parse(line) as { harnessrl_result?: { status?: unknown; turns?: unknown } };
      const r = v.harnessrl_result;
      if (r && typeof r.status === "string" && typeof r.turns === "number") return { status: r.status, turns: r.turns };
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * What a built-in harness runs: its bundle (scripts/bundle.mjs: one CommonJS file with its SDKs, ~40 % less CPU to
 * start) when the build made one, else the compiled entry, which imports its SDKs from node_modules/. A bundle starts
 * through cached-start.cjs, which compiles it from the V8 code cache the build wrote beside it (cached-start.ts).
 */
export const BUNDLES_ENV = "HARNESSRL_BUILTIN_BUNDLES";
/** =0: start the bundle directly, without its code cache (the benchmark's comparison arm). */
export const CODE_CACHE_ENV = "HARNESSRL_BUILTIN_CODE_CACHE";

interface Entry {
  script: string;
  bundled: boolean;
  /** cached-start.cjs, which starts a bundle when the build made it. */
  starter?: string;
  /** The bundle's code cache, when the build wrote one (only with a starter). */
  cache?: string;
}

function entryOf(name: string): Entry {
  // =0: run the unbundled entry (readable stack traces; the benchmark's comparison arm).
  const bundles = join(packageRoot, "dist", "harness", "builtin", "bundles");
  const bundle = join(bundles, `${name}.cjs`);
  if (process.env[BUNDLES_ENV] !== "0" && existsSync(bundle)) {
    const starter = join(bundles, "cached-start.cjs");
    const cache = codeCachePath(bundle);
    if (process.env[CODE_CACHE_ENV] === "0" || !existsSync(starter)) return { script: bundle, bundled: true };
    return { script: bundle, bundled: true, starter, ...(existsSync(cache) ? { cache } : {}) };
  }
  return { script: join(packageRoot, "dist", "harness", "builtin", `${name}.js`), bundled: false };
}

/**
 * Node flags for a built-in harness process. `--liftoff-only`: fetch (undici) parses HTTP with llhttp, a WebAssembly
 * module that V8 compiles with its baseline tier and then again, on background threads, with its optimizing tier:
 * for a process that lives for one rollout and parses a few kilobytes that second compile is pure cost (~0.05 of
 * its ~0.22 CPU-s, docs/harnesses.md). `HARNESSRL_BUILTIN_NODE_FLAGS` overrides them (space-separated; empty: none,
 * the benchmark's comparison arm).
 */
export const BUILTIN_NODE_FLAGS_ENV = "HARNESSRL_BUILTIN_NODE_FLAGS";
const BUILTIN_NODE_FLAGS = ["--liftoff-only"];

function builtinNodeFlags(): string[] {
  const v = process.env[BUILTIN_NODE_FLAGS_ENV];
  return v === undefined ? BUILTIN_NODE_FLAGS : v.split(/\s+/).filter((f) => f.length > 0);
}

function builtin(name: string, summary: string, protocol: Protocol, oracle: OracleProfile): HarnessDefinition {
  let mounts: string[] | null = null;
  return {
    name,
    summary,
    kind: "builtin",
    protocol,
    async ensureInstalled() {
      const { script } = entryOf(name);
      if (!existsSync(script)) throw new InfraError("harness_not_built", `built-in harness ${name} is not compiled (${script}); run npm run build`);
    },
    // Only the harness: its bundle, or the entry file, what it imports and package.json. Never the rest of dist/
    // (task generators, answers, verifiers).
    hostPaths: () => {
      const { script, bundled, starter, cache } = entryOf(name);
      if (bundled) return [script, ...(starter ? [starter] : []), ...(cache ? [cache] : [])];
      if (!mounts && existsSync(script)) mounts = builtinMountSet(packageRoot, script);
      return mounts ?? [script, join(packageRoot, "package.json")];
    },
    launch(ctx: LaunchContext): LaunchPlan {
      const { script, starter } = entryOf(name);
      return {
        argv: [process.execPath, ...builtinNodeFlags(), ...(starter ? [starter] : []), script],
        env: harnessrlEnv(ctx),
        homeFiles: {},
      };
    },
    finished(exit: ExitInfo) {
      const r = builtinResult(exit.stdout);
      if (!r) return { ok: false, detail: `no result line (exit ${exit.exitCode})` };
      return { ok: r.status !== "error", detail: `${r.status} after ${r.turns} turns` };
    },
    oracle,
  };
}

export const builtinHarnesses: HarnessDefinition[] = [
  builtin("chat-agent", "built-in single agent, OpenAI Chat Completions (streamed), tools run/write", "openai-chat", {
    shell: (command) => ({ name: "run", arguments: { command } }),
  }),
  builtin("claw-agent", "built-in single agent, Anthropic Messages (streamed), tools Bash/Write, compacts its context", "anthropic-messages", {
    shell: (command) => ({ name: "Bash", arguments: { command } }),
  }),
  builtin("resp-agent", "built-in single agent, OpenAI Responses (streamed), tools shell(argv)/apply_write", "openai-responses", {
    shell: (command) => ({ name: "shell", arguments: { cmd: ["sh", "-c", command] } }),
  }),
  builtin("central-agent", "built-in central agent delegating to researcher/worker sub-agents (parallel), OpenAI Chat Completions", "openai-chat", {
    shell: (command) => ({ name: "worker", arguments: { task: command } }),
    delegate: (command, kind) => (kind === "research" ? { name: "researcher", arguments: { query: command } } : { name: "worker", arguments: { task: command } }),
    subShell: (command) => ({ name: "sh", arguments: { cmd: command } }),
  }),
];
