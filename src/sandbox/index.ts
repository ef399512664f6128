/** The sandbox runtime. Backends do not register themselves: src/builtins.ts registers the built-in ones. */
export { listSandboxBackends, openSandboxBackend, registerSandboxBackend, sandboxBackends } from "./registry.js";
export type { SandboxBackendAdapter, SandboxBackendFactory } from "./registry.js";
export { builtinSandboxBackends } from "./builtin.js";
export type * from "./types.js";
export { BwrapBackend } from "./bwrap/backend.js";
export type { BwrapBackendOptions } from "./bwrap/backend.js";
export { LocalUnsafeBackend } from "./local/backend.js";
