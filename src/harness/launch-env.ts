import type { LaunchContext } from "./types.js";

/** The variables built-in harnesses read (src/harness/builtin/env.ts validates them inside the sandbox). */
export function harnessrlEnv(ctx: LaunchContext): Record<string, string> {
  return {
    HARNESSRL_BASE_URL: ctx.proxyOrigin,
    HARNESSRL_API_KEY: ctx.apiKey,
    HARNESSRL_MODEL: ctx.model,
    HARNESSRL_PROMPT: ctx.prompt,
    HARNESSRL_MAX_TURNS: String(ctx.maxTurns),
    HARNESSRL_MAX_TOKENS: String(ctx.maxTokens),
  };
}
