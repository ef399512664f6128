import { join } from "node:path";
import { PINS } from "../install/pins.js";
import type { ExitInfo, LaunchContext } from "../types.js";
import { QUIET_ENV, jsonLines, realHarness, stderrHint } from "./common.js";

/** TOML basic string (JSON escaping is a valid subset for the characters we put there). */
function tomlString(s: string): string {
  return JSON.stringify(s);
}

/** `~/.codex/config.toml`: one model provider (the proxy, Responses wire API), no approvals, no telemetry or updates. */
export function codexConfig(ctx: LaunchContext): string {
  return [
    `model = ${tomlString(ctx.model)}`,
    `model_provider = "harnessrl"`,
    `approval_policy = "never"`,
    `sandbox_mode = "danger-full-access"`,
    `check_for_update_on_startup = false`,
    // The hosted web_search tool cannot be served by a local policy (and the sandbox has no web).
    `web_search = "disabled"`,
    ``,
    `[model_providers.harnessrl]`,
    `name = "harnessrl capture proxy"`,
    `base_url = ${tomlString(`${ctx.proxyOrigin}/v1`)}`,
    `wire_api = "responses"`,
    `env_key = "HARNESSRL_API_KEY"`,
    // One attempt: a retried call would be recorded twice and a dead proxy should end the rollout quickly.
    `request_max_retries = 0`,
    `stream_max_retries = 0`,
    ``,
    `[analytics]`,
    `enabled = false`,
    ``,
    `[history]`,
    `persistence = "none"`,
    ``,
    // Sub-agent tools arrive as one `{"type":"namespace"}` tool, which the proxy's Responses endpoint does not accept
    // yet; goals/apps/plugins add tools or network lookups that mean nothing in a sandbox.
    `[agents]`,
    `enabled = false`,
    ``,
    `[features]`,
    // Classic function tools (exec_command, …), whatever the model id: code mode hides them behind a JavaScript tool.
    `code_mode = false`,
    `code_mode_only = false`,
    `goals = false`,
    `apps = false`,
    `plugins = false`,
    ``,
  ].join("\n");
}

/**
 * `codex exec --json` prints JSONL events; a normal end is `{"type":"turn.completed",…}` as the last turn event,
 * a failed one `turn.failed` or a top-level `error`.
 */
export function codexFinished(exit: ExitInfo): { ok: boolean; detail: string } {
  const events = jsonLines(exit.stdout);
  const last = [...events].reverse().find((e) => e.type === "turn.completed" || e.type === "turn.failed" || e.type === "error");
  if (!last) return { ok: false, detail: `no turn.completed event (exit ${exit.exitCode}) ${stderrHint(exit.stderr)}`.trim() };
  if (last.type === "turn.completed") {
    const items = events.filter((e) => e.type === "item.completed").length;
    return { ok: true, detail: `turn.completed after ${items} items` };
  }
  const err = last.error && typeof last.error === "object" ? (last.error as { message?: unknown }).message : last.message;
  return { ok: false, detail: `${String(last.type)}: ${String(err ?? "").slice(0, 200)}` };
}

export const codex = realHarness({
  name: "codex",
  summary: "OpenAI Codex CLI, headless (codex exec --json), OpenAI Responses",
  protocol: "openai-responses",
  pin: PINS.codex,
  launch(ctx, { packageDir }) {
    return {
      // The npm launcher picks the platform binary and puts its bundled ripgrep on PATH.
      argv: [process.execPath, join(packageDir, "bin", "codex.js"), "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--cd", ctx.workspace, "--model", ctx.model, ctx.prompt],
      env: {
        ...QUIET_ENV,
        HARNESSRL_API_KEY: ctx.apiKey,
        CODEX_HOME: `${ctx.home}/.codex`,
        RUST_LOG: "error",
      },
      homeFiles: { ".codex/config.toml": codexConfig(ctx) },
    };
  },
  finished: codexFinished,
});
