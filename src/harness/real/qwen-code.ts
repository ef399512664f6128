import { join } from "node:path";
import { PINS } from "../install/pins.js";
import type { ExitInfo } from "../types.js";
import { QUIET_ENV, jsonLines, realHarness, stderrHint } from "./common.js";

/** `~/.qwen/settings.json`: no usage statistics, no telemetry, no auto-update. */
export function qwenSettings(): string {
  return `${JSON.stringify(
    {
      general: { enableAutoUpdate: false, disableAutoUpdate: true, disableUpdateNag: true },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false, logPrompts: false },
      security: { auth: { selectedType: "openai" } },
    },
    null,
    2,
  )}\n`;
}

/** Qwen Code's stream-json ends like Claude Code's: `{"type":"result","subtype":"success","is_error":false,…}`. */
export function qwenFinished(exit: ExitInfo): { ok: boolean; detail: string } {
  const result = jsonLines(exit.stdout).reverse().find((e) => e.type === "result");
  if (!result) return { ok: false, detail: `no result event (exit ${exit.exitCode}) ${stderrHint(exit.stderr)}`.trim() };
  const subtype = typeof result.subtype === "string" ? result.subtype : "?";
  const turns = typeof result.num_turns === "number" ? ` after ${result.num_turns} turns` : "";
  const ok = subtype === "success" && result.is_error !== true;
  const label = result.is_error === true ? `${subtype} (is_error)` : subtype;
  const why = typeof result.error === "object" && result.error ? JSON.stringify(result.error) : String(result.result ?? "");
  return { ok, detail: `${label}${turns}${ok ? "" : `: ${why.slice(0, 200)}`}` };
}

export const qwenCode = realHarness({
  name: "qwen-code",
  summary: "Qwen Code CLI, headless (qwen --yolo, stream-json), OpenAI Chat Completions",
  protocol: "openai-chat",
  pin: PINS["qwen-code"],
  launch(ctx, { packageDir }) {
    return {
      argv: [
        process.execPath, join(packageDir, "cli.js"),
        "--auth-type", "openai", "--model", ctx.model, "--yolo",
        "--output-format", "stream-json",
        "--max-session-turns", String(ctx.maxTurns),
        ctx.prompt,
      ],
      env: {
        ...QUIET_ENV,
        OPENAI_BASE_URL: `${ctx.proxyOrigin}/v1`,
        OPENAI_API_KEY: ctx.apiKey,
        OPENAI_MODEL: ctx.model,
        // It would re-exec itself with a bigger heap; one process is easier to limit and kill.
        QWEN_CODE_NO_RELAUNCH: "true",
        QWEN_CODE_SUPPRESS_YOLO_WARNING: "1",
      },
      homeFiles: { ".qwen/settings.json": qwenSettings() },
    };
  },
  finished: qwenFinished,
});
