import { Registry } from "../core/registry.js";
import type { HarnessDefinition } from "./types.js";

/** The harness definitions; filled by registerBuiltins() (src/builtins.ts) and library users. */
export const harnesses = new Registry<HarnessDefinition>("harness", "unknown_harness");

export function registerHarness(def: HarnessDefinition): void {
  harnesses.register(def);
}

export function getHarness(name: string): HarnessDefinition {
  return harnesses.get(name);
}

export function listHarnesses(): HarnessDefinition[] {
  return harnesses.values();
}
