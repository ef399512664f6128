// Public surface of the harness layer. Definitions do not register themselves: src/builtins.ts registers the built-in
// and real ones.
export { builtinHarnesses } from "./builtin/definitions.js";
export { realHarnesses } from "./real/index.js";
export { getHarness, harnesses, listHarnesses, registerHarness } from "./registry.js";
export type { HarnessDefinition, LaunchContext, LaunchPlan } from "./types.js";
