// Public surface of the scripted engine (src/builtins.ts registers its adapter from ./register.ts).
export { SCRIPTED_DEFAULT_CONTEXT, ScriptedEngine, createScriptedEngine } from "./scripted-engine.js";
export type { ScriptedEngineOptions } from "./scripted-engine.js";
export type { ScriptFunction, ScriptMessage, ScriptReply, ScriptRequest } from "./script-types.js";
export { loadScript, scriptedEngineAdapter, scriptedOptions } from "./register.js";
