import { UserError } from "../core/errors.js";
import type { SandboxBackend, SandboxBackendOptions } from "./types.js";

export type SandboxBackendFactory = (options: SandboxBackendOptions) => Promise<SandboxBackend>;

interface Entry {
  factory: SandboxBackendFactory;
  summary: string;
}

const backends = new Map<string, Entry>();

/** Backends register themselves by name (`bwrap`, `local-unsafe`, …). */
export function registerSandboxBackend(name: string, summary: string, factory: SandboxBackendFactory): void {
  backends.set(name, { factory, summary });
}

export function listSandboxBackends(): { name: string; summary: string }[] {
  return [...backends.entries()].map(([name, e]) => ({ name, summary: e.summary }));
}

/** Opens a backend and reaps what crashed control planes left in its state root before handing it out. */
export async function openSandboxBackend(name: string, options: SandboxBackendOptions = {}): Promise<SandboxBackend> {
  const entry = backends.get(name);
  if (!entry) {
    const known = [...backends.keys()].sort().join(", ");
    throw new UserError("unknown_sandbox_backend", `unknown sandbox backend "${name}" (known: ${known})`);
  }
  const backend = await entry.factory(options);
  const report = await backend.reapOrphans();
  if (report.reaped.length > 0) console.warn(`harnessrl sandbox: reaped ${report.reaped.length} sandbox(es) left by a crashed control plane`);
  for (const e of report.errors) console.warn(`harnessrl sandbox: reaping: ${e}`);
  return backend;
}
