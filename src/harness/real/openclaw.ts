import { join } from "node:path";
import { z } from "zod";
import { PINS } from "../install/pins.js";
import type { ExitInfo, LaunchContext } from "../types.js";
import { QUIET_ENV, jsonLines, node24, realHarness, stderrHint } from "./common.js";

/** The provider id in the generated config; the model reference is `<provider>/<model>`. */
export const OPENCLAW_PROVIDER = "harnessrl";
/** Where the config goes under HOME (also OpenClaw's ambient location, so nothing else is read). */
const CONFIG_PATH = ".openclaw/openclaw.json";

/**
 * OpenClaw's config: one provider (the proxy, Responses API: its chat and Anthropic modes rewrite earlier turns, the
 * Responses mode keeps each prompt an exact extension of the last), the policy as primary model, no update checks.
 */
export function openclawConfig(ctx: LaunchContext): string {
  return `${JSON.stringify(
    {
      models: {
        mode: "replace",
        providers: {
          [OPENCLAW_PROVIDER]: {
            baseUrl: `${ctx.proxyOrigin}/v1`,
            apiKey: ctx.apiKey,
            api: "openai-responses",
            models: [
              {
                id: ctx.model,
                name: ctx.model,
                reasoning: false,
                input: ["text"],
                cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
                contextWindow: 262144,
                maxTokens: ctx.maxTokens,
              },
            ],
          },
        },
      },
      agents: { defaults: { model: { primary: `${OPENCLAW_PROVIDER}/${ctx.model}` } } },
      update: { checkOnStart: false },
    },
    null,
    2,
  )}\n`;
}

const envelopeSchema = z.looseObject({
  ok: z.boolean(),
  status: z.string(),
  assistantTurns: z.number().optional(),
  error: z.looseObject({ message: z.string().optional(), kind: z.string().optional() }).nullish(),
});

/** The last top-level JSON object in stdout: single-line, or pretty-printed (a `{` at the start of a line to the end). */
function lastJsonObject(stdout: string): unknown[] {
  const candidates: unknown[] = jsonLines(stdout).reverse();
  const text = stdout.trimEnd();
  let at = text.lastIndexOf("\n{");
  at = at < 0 ? (text.startsWith("{") ? 0 : -1) : at + 1;
  if (at >= 0) {
    try {
      candidates.unshift(JSON.parse(text.slice(at)));
    } catch {
      // not a complete object (e.g. cut by output bounding)
    }
  }
  return candidates;
}

/**
 * `agent exec --json` prints one stable envelope `{ok, status: "ok"|"error"|"timeout", error?, …}` on stdout
 * (pretty-printed over several lines).
 */
export function openclawFinished(exit: ExitInfo): { ok: boolean; detail: string } {
  const envelope = lastJsonObject(exit.stdout)
    .map((e) => envelopeSchema.safeParse(e))
    .find((r) => r.success)?.data;
  if (!envelope) return { ok: false, detail: `no JSON envelope (exit ${exit.exitCode}) ${stderrHint(exit.stderr)}`.trim() };
  const turns = envelope.assistantTurns !== undefined ? ` after ${envelope.assistantTurns} turns` : "";
  if (envelope.ok && envelope.status === "ok") return { ok: true, detail: `ok${turns}` };
  return { ok: false, detail: `${envelope.status}${turns}: ${envelope.error?.kind ?? ""} ${envelope.error?.message ?? ""}`.trim().slice(0, 300) };
}

export const openclaw = realHarness({
  name: "openclaw",
  summary: "OpenClaw, headless (openclaw agent exec --json) on Node 24, OpenAI Responses",
  protocol: "openai-responses",
  pin: PINS.openclaw,
  needsNode24: true,
  launch(ctx, { packageDir }) {
    return {
      argv: [
        node24.node(), join(packageDir, "openclaw.mjs"), "agent", "exec",
        "--config", `${ctx.home}/${CONFIG_PATH}`, "--cwd", ctx.workspace, "--json",
        "--model", `${OPENCLAW_PROVIDER}/${ctx.model}`,
        ctx.prompt,
      ],
      env: {
        ...QUIET_ENV,
        OPENCLAW_NO_AUTO_UPDATE: "1",
        OPENCLAW_DISABLE_BONJOUR: "1",
        OPENCLAW_SKIP_ONBOARDING: "1",
        // Its own node first on PATH, so anything it spawns with `node` gets Node 24 too.
        PATH: `${node24.binDir()}:/usr/local/bin:/usr/bin:/bin`,
      },
      homeFiles: { [CONFIG_PATH]: openclawConfig(ctx) },
    };
  },
  finished: openclawFinished,
});
