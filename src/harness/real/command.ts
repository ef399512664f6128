import { existsSync } from "node:fs";
import { isAbsolute } from "node:path";
import { z } from "zod";
import { UserError } from "../../core/errors.js";
import { parseSpec } from "../../core/registry.js";
import type { Protocol } from "../../icr/records.js";
import type { ExitInfo, HarnessDefinition, LaunchContext } from "../types.js";
import { harnessrlEnv } from "../launch-env.js";
import { QUIET_ENV, stderrHint } from "./common.js";

/**
 * The generic `command` harness: any program that honours OPENAI_BASE_URL / ANTHROPIC_BASE_URL (both are given, with
 * keys and model names), started with an argv template or a shell command line. Placeholders in argv elements:
 * {prompt} {model} {api_key} {openai_base_url} {anthropic_base_url} {workspace} {home}. A shell command line gets the
 * same values only through the environment ($HARNESSRL_PROMPT, …) so that nothing is ever spliced into shell code.
 */
export const commandHarnessConfigSchema = z.strictObject({
  name: z.string().min(1).default("command"),
  /** argv template (no shell), or one shell command line run with `/bin/sh -c`. */
  command: z.union([z.array(z.string().min(1)).min(1), z.string().min(1)]),
  /** Informational: the protocol the program speaks (records carry the one actually used per call). */
  protocol: z.enum(["openai-chat", "openai-responses", "anthropic-messages"]).default("openai-chat"),
  /** Host paths (absolute) the program needs visible read-only in the sandbox: its installation, its runtime. */
  hostPaths: z.array(z.string().refine((p) => isAbsolute(p), "must be an absolute path")).default([]),
  /** Extra environment for the program. */
  env: z.record(z.string(), z.string()).default({}),
  /** Files to generate under HOME (relative path → content). */
  homeFiles: z.record(z.string(), z.string()).default({}),
});
export type CommandHarnessConfig = z.input<typeof commandHarnessConfigSchema>;

function placeholders(ctx: LaunchContext): Record<string, string> {
  return {
    prompt: ctx.prompt,
    model: ctx.model,
    api_key: ctx.apiKey,
    openai_base_url: `${ctx.proxyOrigin}/v1`,
    anthropic_base_url: ctx.proxyOrigin,
    workspace: ctx.workspace,
    home: ctx.home,
  };
}

function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{([a-z_]+)\}/g, (whole, key: string) => values[key] ?? whole);
}

/** Environment every command harness gets: both protocols' conventional variables, pointing at the proxy. */
export function proxyEnv(ctx: LaunchContext): Record<string, string> {
  return {
    OPENAI_BASE_URL: `${ctx.proxyOrigin}/v1`,
    OPENAI_API_BASE: `${ctx.proxyOrigin}/v1`,
    OPENAI_API_KEY: ctx.apiKey,
    OPENAI_MODEL: ctx.model,
    ANTHROPIC_BASE_URL: ctx.proxyOrigin,
    ANTHROPIC_API_KEY: ctx.apiKey,
    ANTHROPIC_AUTH_TOKEN: ctx.apiKey,
    ANTHROPIC_MODEL: ctx.model,
    ...harnessrlEnv(ctx),
  };
}

/** A generic program ends normally when it exits 0 (it has no headless output format we could read). */
export function commandFinished(exit: ExitInfo): { ok: boolean; detail: string } {
  if (exit.exitCode === 0) return { ok: true, detail: "exit 0" };
  return { ok: false, detail: `exit ${exit.exitCode} ${stderrHint(exit.stderr)}`.trim() };
}

/** Builds a command harness definition from a (validated) config. */
export function createCommandHarness(input: CommandHarnessConfig): HarnessDefinition {
  const parsed = commandHarnessConfigSchema.safeParse(input);
  if (!parsed.success) throw new UserError("invalid_command_harness", `command harness: ${z.prettifyError(parsed.error)}`);
  const config = parsed.data;
  const shown = typeof config.command === "string" ? config.command : config.command.join(" ");
  return {
    name: config.name,
    summary: `generic program honouring OPENAI_BASE_URL / ANTHROPIC_BASE_URL: ${shown.length > 80 ? `${shown.slice(0, 80)}…` : shown}`,
    kind: "command",
    protocol: config.protocol satisfies Protocol,
    async ensureInstalled() {
      const missing = config.hostPaths.filter((p) => !existsSync(p));
      if (missing.length > 0) throw new UserError("command_harness_path_not_found", `command harness ${config.name}: host paths do not exist: ${missing.join(", ")}`);
    },
    hostPaths: () => [...config.hostPaths],
    launch(ctx) {
      const values = placeholders(ctx);
      const argv = typeof config.command === "string" ? ["/bin/sh", "-c", config.command] : config.command.map((a) => fill(a, values));
      return { argv, env: { ...QUIET_ENV, ...proxyEnv(ctx), ...config.env }, homeFiles: { ...config.homeFiles } };
    },
    finished: commandFinished,
  };
}

/**
 * `command:<template>` (a shell command line) or `command:<JSON config>` (a {@link CommandHarnessConfig} object or an
 * argv array), as given on the command line; the harness is named after the whole spec.
 */
export function commandHarnessFromSpec(spec: string): HarnessDefinition {
  const { scheme, arg } = parseSpec(spec);
  if (scheme !== "command" || !spec.includes(":")) throw new UserError("invalid_command_harness", `not a command harness spec: "${spec}" (use command:<command line>)`);
  const body = arg.trim();
  if (!body) throw new UserError("invalid_command_harness", "command: needs a command line, e.g. command:my-agent --prompt \"$HARNESSRL_PROMPT\"");
  if (body.startsWith("{") || body.startsWith("[")) {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch (e) {
      throw new UserError("invalid_command_harness", `command harness spec is not valid JSON: ${(e as Error).message}`);
    }
    const config = Array.isArray(value) ? { command: value as string[] } : (value as CommandHarnessConfig);
    return createCommandHarness({ ...config, name: spec });
  }
  return createCommandHarness({ name: spec, command: body });
}

/** Environment variable the registered `command` harness reads its shell command line from. */
export const COMMAND_ENV = "HARNESSRL_HARNESS_COMMAND";

/**
 * The registered `command` harness: its command line comes from $HARNESSRL_HARNESS_COMMAND (read when it is used, so
 * `HARNESSRL_HARNESS_COMMAND='my-agent "$HARNESSRL_PROMPT"' harnessrl rollout --harness command` works from the CLI).
 */
export const envCommandHarness: HarnessDefinition = {
  name: "command",
  summary: `generic program honouring OPENAI_BASE_URL / ANTHROPIC_BASE_URL; command line from $${COMMAND_ENV}`,
  kind: "command",
  protocol: "openai-chat",
  async ensureInstalled() {
    fromEnv();
  },
  hostPaths: () => [],
  launch: (ctx) => fromEnv().launch(ctx),
  finished: commandFinished,
};

function fromEnv(): HarnessDefinition {
  const line = process.env[COMMAND_ENV];
  if (!line || !line.trim()) throw new UserError("command_harness_unset", `the command harness needs $${COMMAND_ENV} (a shell command line; the prompt is in $HARNESSRL_PROMPT)`);
  return createCommandHarness({ name: "command", command: line });
}
