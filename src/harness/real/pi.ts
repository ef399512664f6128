import { join } from "node:path";
import { PINS } from "../install/pins.js";
import type { ExitInfo, LaunchContext } from "../types.js";
import { QUIET_ENV, jsonLines, lastLine, lastStringField, realHarness, stderrHint } from "./common.js";

/** The provider name pi is told to use (an entry of `~/.pi/agent/models.json`). */
export const PI_PROVIDER = "harnessrl";

/** `~/.pi/agent/models.json`: one OpenAI-compatible provider (the proxy) serving the policy model. */
export function piModels(ctx: LaunchContext): string {
  return `${JSON.stringify(
    {
      providers: {
        [PI_PROVIDER]: {
          baseUrl: `${ctx.proxyOrigin}/v1`,
          api: "openai-completions",
          apiKey: ctx.apiKey,
          models: [{ id: ctx.model, name: ctx.model, reasoning: false, input: ["text"], maxTokens: ctx.maxTokens }],
        },
      },
    },
    null,
    2,
  )}\n`;
}

/** `~/.pi/agent/settings.json`: no install telemetry, no startup banner. */
export function piSettings(): string {
  return `${JSON.stringify({ enableInstallTelemetry: false, quietStartup: true, collapseChangelog: true }, null, 2)}\n`;
}

interface PiAssistant {
  role?: unknown;
  stopReason?: unknown;
  errorMessage?: unknown;
}

/**
 * `pi --mode json` ends with `{"type":"agent_end","messages":[…]}`; the run ended normally when the last assistant
 * message did not stop with an error or abort.
 */
export function piFinished(exit: ExitInfo): { ok: boolean; detail: string } {
  const events = jsonLines(exit.stdout);
  const end = [...events].reverse().find((e) => e.type === "agent_end");
  if (!end) return cutAgentEnd(exit);
  const messages = Array.isArray(end.messages) ? (end.messages as PiAssistant[]) : [];
  const assistants = messages.filter((m) => m && m.role === "assistant");
  const last = assistants[assistants.length - 1];
  const stop = typeof last?.stopReason === "string" ? last.stopReason : "none";
  const turns = events.filter((e) => e.type === "turn_end").length;
  const ok = last !== undefined && stop !== "error" && stop !== "aborted";
  return { ok, detail: `agent_end (${stop}) after ${turns} turns${ok ? "" : `: ${String(last?.errorMessage ?? "no assistant message").slice(0, 200)}`}` };
}

/**
 * `agent_end` repeats the whole conversation, so on long runs it outgrows the output tail the runner keeps and arrives
 * cut at its start. Its end is intact: the final message's `stopReason` is the last one in stdout.
 */
function cutAgentEnd(exit: ExitInfo): { ok: boolean; detail: string } {
  const line = lastLine(exit.stdout);
  const stop = line.endsWith("]}") && !line.startsWith("{") ? lastStringField(line, "stopReason") : undefined;
  if (stop === undefined) return { ok: false, detail: `no agent_end event (exit ${exit.exitCode}) ${stderrHint(exit.stderr)}`.trim() };
  const ok = stop !== "error" && stop !== "aborted";
  return { ok, detail: `agent_end (${stop}; event cut by output bounding)${ok ? "" : `: ${lastStringField(line, "errorMessage") ?? ""}`}` };
}

export const pi = realHarness({
  name: "pi",
  summary: "pi coding agent, headless (pi -p --mode json), OpenAI Chat Completions",
  protocol: "openai-chat",
  pin: PINS.pi,
  launch(ctx, { packageDir }) {
    return {
      argv: [process.execPath, join(packageDir, "dist", "cli.js"), "-p", "--mode", "json", "--no-session", "--provider", PI_PROVIDER, "--model", ctx.model, ctx.prompt],
      env: {
        ...QUIET_ENV,
        // No startup network at all: update checks, package update checks, install telemetry.
        PI_OFFLINE: "1",
        PI_SKIP_VERSION_CHECK: "1",
        PI_TELEMETRY: "0",
      },
      homeFiles: { ".pi/agent/models.json": piModels(ctx), ".pi/agent/settings.json": piSettings() },
    };
  },
  finished: piFinished,
});
