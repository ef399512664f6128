import type { HarnessDefinition } from "../types.js";
import { claudeCode } from "./claude-code.js";
import { codex } from "./codex.js";
import { openclaw } from "./openclaw.js";
import { pi } from "./pi.js";
import { qwenCode } from "./qwen-code.js";

/** The real harness CLIs (pinned npm packages), registered by src/harness/index.ts. */
export const realHarnesses: HarnessDefinition[] = [claudeCode, codex, qwenCode, pi, openclaw];
