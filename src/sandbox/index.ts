/** The sandbox runtime: importing this module registers the built-in backends. */
import { BwrapBackend } from "./bwrap/backend.js";
import { LocalUnsafeBackend } from "./local/backend.js";
import { registerSandboxBackend } from "./registry.js";

registerSandboxBackend("bwrap", "bubblewrap: namespaces, read-only system, cgroup limits, proxy-only network", (o) => BwrapBackend.open(o));
registerSandboxBackend("local-unsafe", "NO isolation: plain processes on the host (development only)", (o) => LocalUnsafeBackend.open(o));

export { listSandboxBackends, openSandboxBackend, registerSandboxBackend } from "./registry.js";
export type * from "./types.js";
export { BwrapBackend } from "./bwrap/backend.js";
export type { BwrapBackendOptions } from "./bwrap/backend.js";
export { LocalUnsafeBackend } from "./local/backend.js";
