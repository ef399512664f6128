// Importing this module registers every harness definition (built-in and real).
import { builtinHarnesses } from "./builtin/definitions.js";
import { realHarnesses } from "./real/index.js";
import { registerHarness } from "./registry.js";

for (const def of builtinHarnesses) registerHarness(def);
for (const def of realHarnesses) registerHarness(def);

export { getHarness, listHarnesses, registerHarness } from "./registry.js";
export type { HarnessDefinition, LaunchContext, LaunchPlan } from "./types.js";
