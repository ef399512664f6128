import { parseArgs, type ParseArgsConfig } from "node:util";
import { UserError, errorMessage } from "../core/errors.js";

type Options = NonNullable<ParseArgsConfig["options"]>;

/** Strict option parsing; unknown or malformed options are user errors that show the usage. */
export function parseOptions<O extends Options>(argv: string[], options: O, usage: string): ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: false }>>["values"] {
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
  }
}

export function intOption(name: string, value: string | undefined, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (value.trim() === "" || !Number.isInteger(n) || n < min) throw new UserError("invalid_arguments", `--${name} must be an integer ≥ ${min}, got "${value}"`);
  return n;
}

/** An optional integer option within [min, max] (absent: undefined). */
export function boundedIntOption(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isInteger(n) || n < min || n > max) throw new UserError("invalid_arguments", `--${name} must be an integer from ${min} to ${max}, got "${value}"`);
  return n;
}

/** A TCP port (0 picks a free one): digits only, at most 65535. */
export function portOption(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) throw new UserError("invalid_arguments", `--port must be a port number, got "${value}"`);
  return n;
}

export function numberOption(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) throw new UserError("invalid_arguments", `--${name} must be a number, got "${value}"`);
  return n;
}

export function listOption(value: string | undefined, fallback: string[]): string[] {
  if (value === undefined) return fallback;
  return value.split(",").map((s) => s.trim()).filter((s) => s !== "");
}

/**
 * `--port -5`: node's parseArgs reads "-5" as another option ("ambiguous"). A negative number after a long option is
 * its value; spelled `--port=-5` it reaches the command's own range check, which says what is wrong in one line.
 */
export function joinNegativeValues(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const next = argv[i + 1];
    if (a.startsWith("--") && !a.includes("=") && next !== undefined && /^-(\d|\.\d)/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/**
 * What a user error prints: one line (the first paragraph: argument errors carry the usage after a blank line, which
 * `--help` shows) and its code. Config errors keep their one line per problem.
 */
export function userErrorText(e: { message: string; code: string }, command: string | undefined): string {
  if (e.code !== "invalid_arguments") return `harnessrl: ${e.message} [${e.code}]`;
  const first = e.message.split("\n\n")[0] ?? e.message;
  return `harnessrl: ${first} [${e.code}] (usage: harnessrl ${command ?? ""}${command ? " " : ""}--help)`;
}
