import { UserError } from "../core/errors.js";
import type { HarnessDefinition } from "./types.js";

const harnesses = new Map<string, HarnessDefinition>();

export function registerHarness(def: HarnessDefinition): void {
  harnesses.set(def.name, def);
}

export function getHarness(name: string): HarnessDefinition {
  const def = harnesses.get(name);
  if (!def) throw new UserError("unknown_harness", `unknown harness "${name}" (known: ${[...harnesses.keys()].sort().join(", ")})`);
  return def;
}

export function listHarnesses(): HarnessDefinition[] {
  return [...harnesses.values()];
}
