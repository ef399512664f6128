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
