/**
 * Which task programs may run in the control plane (vm-run.ts) instead of as sandboxed processes: exactly our own
 * built-in ones, recognised by their full text, so a task file that changes a byte of one gets the sandbox as before.
 * Each listed program is checked against its real run, case by case: `calc` against its own process in
 * test/tasks/native-programs.test.ts, the verifiers (and `calc` again) through real rollouts, natively and sandboxed,
 * in test/rollout/native-programs.test.ts.
 * `HARNESSRL_NATIVE_PROGRAMS=0` turns it off (the benchmark's other arm, and a way to rule it out).
 */
import { VERIFIER_DIR, fileBytes, type Task } from "../task.js";
import { CALC_PROGRAM } from "./calc.js";
import { ARITH_VERIFIER, LOOKUP_VERIFIER } from "./verifiers.js";

export const NATIVE_PROGRAMS_ENV = "HARNESSRL_NATIVE_PROGRAMS";

/**
 * Host tools: their only effects are stdout, stderr, the exit code and appending to their own log, and they read
 * nothing but the task's files and their own call's argument files (earlier calls' inputs are not in the native view
 * and are not copied to a tool sandbox started later).
 */
const TOOLS = new Set<string>([CALC_PROGRAM]);
/** Verifiers: they read the workspace and their own directory, and print their result. */
const VERIFIERS = new Set<string>([ARITH_VERIFIER, LOOKUP_VERIFIER]);
const VERIFIER_FILE = "verify.cjs";

/**
 * What ran natively in this process and what was handed back to the sandbox (process-wide totals, for benchmarks,
 * tests and anyone asking why a rollout started a tool sandbox after all).
 */
export const nativeCounters = { toolCalls: 0, toolFallbacks: 0, verifierRuns: 0, verifierFallbacks: 0 };

export function nativeProgramsEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[NATIVE_PROGRAMS_ENV] !== "0";
}

/** The program text of a host tool that can run natively, if this one can. */
export function nativeTool(task: Task, tool: string): string | undefined {
  const entry = task.files[tool];
  if (entry === undefined || !nativeProgramsEnabled()) return undefined;
  const text = fileBytes(entry).data.toString("utf8");
  return TOOLS.has(text) ? text : undefined;
}

/** The verifier's program text when the task's verifier is one of ours run the usual way (`node <dir>/verify.cjs`). */
export function nativeVerifier(task: Task): string | undefined {
  const { command, files } = task.verifier;
  const entry = files[VERIFIER_FILE];
  if (entry === undefined || !nativeProgramsEnabled()) return undefined;
  if (command.length !== 2 || command[0] !== "node" || command[1] !== `${VERIFIER_DIR}/${VERIFIER_FILE}`) return undefined;
  const text = fileBytes(entry).data.toString("utf8");
  return VERIFIERS.has(text) ? text : undefined;
}
