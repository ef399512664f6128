import { registerBuiltins } from "../../src/builtins.js";

// Runs before each test file, in its own module graph: the registries the file's imports see are filled.
registerBuiltins();
