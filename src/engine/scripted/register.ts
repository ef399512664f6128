import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { UserError, errorMessage } from "../../core/errors.js";
import { registerEngine } from "../registry.js";
import { ScriptedEngine } from "./scripted-engine.js";
import type { ScriptedEngineOptions } from "./scripted-engine.js";
import type { ScriptFunction } from "./script-types.js";

/** `<path>[?ctx=N&delay=MS]`: the module path and engine options. */
export function parseScriptedArg(arg: string): { path: string; options: Omit<ScriptedEngineOptions, "spec"> } {
  const q = arg.indexOf("?");
  const path = q < 0 ? arg : arg.slice(0, q);
  if (!path) throw new UserError("invalid_engine_spec", "scripted engine needs a module path: scripted:<path to .mjs>[?ctx=N]");
  const options: Omit<ScriptedEngineOptions, "spec"> = {};
  if (q >= 0) {
    for (const [key, value] of new URLSearchParams(arg.slice(q + 1))) {
      const n = Number(value);
      if (key === "ctx") {
        if (!Number.isInteger(n) || n < 1) throw new UserError("invalid_engine_spec", `scripted engine: ctx must be a positive integer, got "${value}"`);
        options.contextWindow = n;
      } else if (key === "delay") {
        if (!Number.isFinite(n) || n < 0) throw new UserError("invalid_engine_spec", `scripted engine: delay must be a non-negative number of ms, got "${value}"`);
        options.tokenDelayMs = n;
      } else throw new UserError("invalid_engine_spec", `scripted engine: unknown option "${key}" (known: ctx, delay)`);
    }
  }
  return { path, options };
}

/** Loads a script module; its default export (sync or async function) plays the model. */
export async function loadScript(path: string): Promise<ScriptFunction> {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new UserError("invalid_scripted_module", `scripted engine module ${abs} does not exist`);
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(abs).href)) as { default?: unknown };
  } catch (e) {
    throw new UserError("invalid_scripted_module", `cannot load scripted engine module ${abs}: ${errorMessage(e)}`, { cause: e });
  }
  if (typeof mod.default !== "function") {
    throw new UserError("invalid_scripted_module", `scripted engine module ${abs} must default-export a function (request) => ({ content?, toolCalls? })`);
  }
  return mod.default as ScriptFunction;
}

registerEngine("scripted", "scripted:<module.mjs>[?ctx=N&delay=MS] — a JavaScript function plays the model (tests, driving harnesses without a model)", async (arg) => {
  const { path, options } = parseScriptedArg(arg);
  return new ScriptedEngine(await loadScript(path), { ...options, spec: `scripted:${arg}` });
});
