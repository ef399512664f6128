import type { OracleStep } from "./task.js";

/** POSIX single-quote quoting: safe for any string in `sh -c`. */
export function shellQuote(s: string): string {
  if (/^[A-Za-z0-9_./=:@%+-]+$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A shell command line equivalent to a step, for harnesses whose only tool is a shell. */
export function stepAsShellCommand(step: OracleStep): string {
  if (step.kind === "run") return step.command;
  const dir = step.path.includes("/") ? step.path.slice(0, step.path.lastIndexOf("/")) : "";
  const write = `printf '%s' ${shellQuote(step.content)} > ${shellQuote(step.path)}`;
  return dir ? `mkdir -p ${shellQuote(dir)} && ${write}` : write;
}
