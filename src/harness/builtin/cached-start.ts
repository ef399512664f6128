/**
 * Starts a built-in harness's one-file CommonJS bundle with V8's code cache:
 *   node [flags] cached-start.cjs <dir>/<name>.cjs
 * runs the bundle as Node would (`require.main` aside), compiled from `<dir>/<name>.v8cache` when that cache fits.
 *
 * Why: a harness process lives for one rollout, so V8 parses and compiles the bundle's functions (the SDK, zod, the
 * stream parsers) afresh in every one of them; Node 20 has no compile cache for user code. Compiled from a cache that
 * holds the functions one whole run used, a two-turn chat-agent run costs ~18 ms less CPU (~12 %; docs/harnesses.md).
 *
 * The cache is written at build time only, by trusted code (src/rollout/code-cache.ts runs each harness once against
 * a scripted model, with the flags the sandbox uses) and mounted read-only: a cache is compiled code, so nothing a
 * sandboxed process wrote may ever become one. V8 rejects a cache made by another V8, under other flags or for other
 * source, and the bundle then compiles from source as it would without one (`HARNESSRL_CODE_CACHE=check` says which).
 *
 * `HARNESSRL_CODE_CACHE` (unset in sandboxes):
 * - `write:<file>`: run, then write the cache of what ran to <file> on exit (the build's warm-up run);
 * - `check`: compile with the cache, print `accepted`, `rejected` or `absent`, and exit without running the harness.
 * Node built-ins only: bundled into one CommonJS file beside the harnesses (scripts/bundle.mjs).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire, wrap } from "node:module";
import { dirname } from "node:path";
import { Script, constants } from "node:vm";
import { CODE_CACHE_MODE_ENV, codeCachePath } from "./code-cache-files.js";

type CommonJsWrapper = (exports: unknown, require: NodeJS.Require, module: { exports: unknown }, filename: string, dirname: string) => void;

function start(): void {
  const file = process.argv[2];
  if (!file || !file.endsWith(".cjs")) {
    process.stderr.write("cached-start: usage: node cached-start.cjs <bundle.cjs>\n");
    process.exit(2);
  }
  const mode = process.env[CODE_CACHE_MODE_ENV] ?? "";
  const writeTo = mode.startsWith("write:") ? mode.slice("write:".length) : undefined;
  const cacheFile = codeCachePath(file);
  const cachedData = writeTo === undefined && existsSync(cacheFile) ? readFileSync(cacheFile) : undefined;
  // A shebang line is not JavaScript inside the wrapper; blank it, as Node's own loader does.
  const source = readFileSync(file, "utf8").replace(/^#!.*/, "");
  const script = new Script(wrap(source), {
    filename: file,
    ...(cachedData ? { cachedData } : {}),
    // The SDKs keep an `import("node:buffer")` fallback: resolve it as the main context would.
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  if (mode === "check") {
    process.stdout.write(`${cachedData === undefined ? "absent" : script.cachedDataRejected ? "rejected" : "accepted"}\n`);
    return;
  }
  if (writeTo !== undefined) process.on("exit", () => writeFileSync(writeTo, script.createCachedData()));
  // The harness sees the argv it would have had if started directly: [node, <bundle>, ...].
  process.argv.splice(1, 1);
  const module = { exports: {} as unknown };
  const run = script.runInThisContext() as CommonJsWrapper;
  run.call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
}

start();
