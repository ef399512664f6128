import { BwrapBackend } from "./bwrap/backend.js";
import { LocalUnsafeBackend } from "./local/backend.js";
import type { SandboxBackendAdapter } from "./registry.js";

const bwrapSandbox: SandboxBackendAdapter = {
  name: "bwrap",
  summary: "bubblewrap: namespaces, read-only system, cgroup limits, proxy-only network",
  open: (o) => BwrapBackend.open(o),
};

const localUnsafeSandbox: SandboxBackendAdapter = {
  name: "local-unsafe",
  summary: "NO isolation: plain processes on the host (development only)",
  open: (o) => LocalUnsafeBackend.open(o),
};

/** The built-in sandbox backends (registered by src/builtins.ts). */
export const builtinSandboxBackends: readonly SandboxBackendAdapter[] = [bwrapSandbox, localUnsafeSandbox];
