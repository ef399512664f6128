import type { HarnessDefinition } from "../types.js";
import { claudeCode } from "./claude-code.js";
import { codex } from "./codex.js";
import { envCommandHarness } from "./command.js";
import { openclaw } from "./openclaw.js";
import { pi } from "./pi.js";
import { qwenCode } from "./qwen-code.js";

/** The real harness CLIs (pinned npm packages) and the generic `command` harness, registered by src/builtins.ts. */
export const realHarnesses: HarnessDefinition[] = [claudeCode, codex, qwenCode, pi, openclaw, envCommandHarness];
export { commandHarnessFromSpec, createCommandHarness } from "./command.js";
export { REAL_HARNESS_SHELL_TOOLS } from "./shell-tools.js";
export type { CommandHarnessConfig } from "./command.js";
