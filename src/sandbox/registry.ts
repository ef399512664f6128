import { Registry } from "../core/registry.js";
import type { SandboxBackend, SandboxBackendOptions } from "./types.js";

export type SandboxBackendFactory = (options: SandboxBackendOptions) => Promise<SandboxBackend>;

/** A sandbox backend as registered by name (`bwrap`, `local-unsafe`, …). */
export interface SandboxBackendAdapter {
  name: string;
  summary: string;
  open: SandboxBackendFactory;
}

/** The sandbox backends; filled by registerBuiltins() (src/builtins.ts) and library users. */
export const sandboxBackends = new Registry<SandboxBackendAdapter>("sandbox backend", "unknown_sandbox_backend");

export function registerSandboxBackend(adapter: SandboxBackendAdapter): void {
  sandboxBackends.register(adapter);
}

export function listSandboxBackends(): { name: string; summary: string }[] {
  return sandboxBackends.list();
}

/** Opens a backend and reaps what crashed control planes left in its state root before handing it out. */
export async function openSandboxBackend(name: string, options: SandboxBackendOptions = {}): Promise<SandboxBackend> {
  const backend = await sandboxBackends.get(name).open(options);
  const report = await backend.reapOrphans();
  if (report.reaped.length > 0) console.warn(`harnessrl sandbox: reaped ${report.reaped.length} sandbox(es) left by a crashed control plane`);
  for (const e of report.errors) console.warn(`harnessrl sandbox: reaping: ${e}`);
  return backend;
}
