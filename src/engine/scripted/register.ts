import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { UserError, errorMessage } from "../../core/errors.js";
import type { EngineAdapter } from "../registry.js";
import { formatEngineSpec, stringOptions, type EngineSpec } from "../spec.js";
import { ScriptedEngine } from "./scripted-engine.js";
import type { ScriptedEngineOptions } from "./scripted-engine.js";
import type { ScriptFunction } from "./script-types.js";

/** A structured `scripted` spec: the module path is the target; options `ctx` and `delay`. */
export function scriptedOptions(spec: EngineSpec): { path: string; options: Omit<ScriptedEngineOptions, "spec" | "codec"> } {
  const path = spec.target;
  if (!path) throw new UserError("invalid_engine_spec", "scripted engine needs a module path: scripted:<path to .mjs>[?ctx=N]");
  const options: Omit<ScriptedEngineOptions, "spec" | "codec"> = {};
  for (const [key, value] of Object.entries(stringOptions(spec))) {
    const n = Number(value);
    if (key === "ctx") {
      if (!Number.isInteger(n) || n < 1) throw new UserError("invalid_engine_spec", `scripted engine: ctx must be a positive integer, got "${value}"`);
      options.contextWindow = n;
    } else if (key === "delay") {
      if (!Number.isFinite(n) || n < 0) throw new UserError("invalid_engine_spec", `scripted engine: delay must be a non-negative number of ms, got "${value}"`);
      options.tokenDelayMs = n;
    } else throw new UserError("invalid_engine_spec", `scripted engine: unknown option "${key}" (known: ctx, delay)`);
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

/** The `scripted` engine adapter (registered by src/builtins.ts). */
export const scriptedEngineAdapter: EngineAdapter = {
  name: "scripted",
  summary: "scripted:<module.mjs>[?ctx=N&delay=MS] — a JavaScript function plays the model (tests, driving harnesses without a model)",
  create: async (spec, factory) => {
    const { path, options } = scriptedOptions(spec);
    return new ScriptedEngine(await loadScript(path), { ...options, spec: formatEngineSpec(spec), ...(factory.codec ? { codec: factory.codec } : {}) });
  },
};
