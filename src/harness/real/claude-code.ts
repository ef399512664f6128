import { join } from "node:path";
import { PINS } from "../install/pins.js";
import type { ExitInfo } from "../types.js";
import { QUIET_ENV, jsonLines, lastLine, lastStringField, realHarness, stderrHint } from "./common.js";

/**
 * Claude Code's `--output-format stream-json` ends with `{"type":"result","subtype":"success"|"error_…","is_error":…}`.
 * A run that ends without that event crashed (or was killed).
 */
export function claudeFinished(exit: ExitInfo): { ok: boolean; detail: string } {
  const result = jsonLines(exit.stdout).reverse().find((e) => e.type === "result");
  if (!result) return cutResult(exit);
  const subtype = typeof result.subtype === "string" ? result.subtype : "?";
  const turns = typeof result.num_turns === "number" ? ` after ${result.num_turns} turns` : "";
  const ok = subtype === "success" && result.is_error !== true;
  const label = result.is_error === true ? `${subtype} (is_error)` : subtype;
  return { ok, detail: `${label}${turns}${ok ? "" : `: ${String(result.result ?? "").slice(0, 200)}`}` };
}

/** The result event (2–3 KB) cut at its start by output bounding: its type, subtype and is_error come late in it. */
function cutResult(exit: ExitInfo): { ok: boolean; detail: string } {
  const line = lastLine(exit.stdout);
  if (line.startsWith("{") || !line.endsWith("}") || !line.includes('"type":"result"')) {
    return { ok: false, detail: `no result event (exit ${exit.exitCode}) ${stderrHint(exit.stderr)}`.trim() };
  }
  const subtype = lastStringField(line, "subtype") ?? "?";
  const ok = subtype === "success" && line.includes('"is_error":false');
  return { ok, detail: `${subtype}${ok ? "" : " (is_error)"} (result event cut by output bounding)` };
}

export const claudeCode = realHarness({
  name: "claude-code",
  summary: "Claude Code CLI, headless (claude -p, stream-json), Anthropic Messages",
  protocol: "anthropic-messages",
  pin: PINS["claude-code"],
  launch(ctx, { packageDir }) {
    const m = ctx.model;
    return {
      argv: [
        join(packageDir, "bin", "claude.exe"), "-p", ctx.prompt,
        "--output-format", "stream-json", "--verbose",
        "--permission-mode", "bypassPermissions",
        "--model", m,
        "--max-turns", String(ctx.maxTurns),
      ],
      env: {
        ...QUIET_ENV,
        // Base URL without /v1: the client appends /v1/messages itself.
        ANTHROPIC_BASE_URL: ctx.proxyOrigin,
        ANTHROPIC_API_KEY: ctx.apiKey,
        // Every model slot, including the small/fast one used for side calls, is the policy.
        ANTHROPIC_MODEL: m,
        ANTHROPIC_DEFAULT_OPUS_MODEL: m,
        ANTHROPIC_DEFAULT_SONNET_MODEL: m,
        ANTHROPIC_DEFAULT_HAIKU_MODEL: m,
        ANTHROPIC_SMALL_FAST_MODEL: m,
        CLAUDE_CODE_SUBAGENT_MODEL: m,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        CLAUDE_CODE_DISABLE_FEATURE_FLAGS: "1",
        CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS: "1",
        CLAUDE_CODE_ENABLE_TELEMETRY: "0",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
        DISABLE_GROWTHBOOK: "1",
        DISABLE_AUTOUPDATER: "1",
        DISABLE_UPDATES: "1",
        DISABLE_BUG_COMMAND: "1",
        DISABLE_FEEDBACK_COMMAND: "1",
        DISABLE_PROMPT_CACHING: "1",
        // Default is 10 retries with backoff (~3 min against a proxy that refuses the key); two bound a stall.
        CLAUDE_CODE_MAX_RETRIES: "2",
        // Without this, a per-conversation hash block opens the system prompt (differs per sub-agent and run).
        CLAUDE_CODE_ATTRIBUTION_HEADER: "false",
        // bypassPermissions is refused as root unless the CLI is told it runs in a sandbox (it does).
        IS_SANDBOX: "1",
      },
      homeFiles: {},
    };
  },
  finished: claudeFinished,
});
