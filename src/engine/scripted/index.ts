// Public surface of the scripted engine (registration happens in ./register.ts, imported by src/engine/index.ts).
export { SCRIPTED_DEFAULT_CONTEXT, ScriptedEngine, createScriptedEngine } from "./scripted-engine.js";
export type { ScriptedEngineOptions } from "./scripted-engine.js";
export type { ScriptFunction, ScriptMessage, ScriptReply, ScriptRequest } from "./script-types.js";
export { loadScript, scriptedOptions } from "./register.js";
