import { spawn } from "node:child_process";
import { InfraError } from "../core/errors.js";
import { copyFile, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { installVerifier, writeFileMap } from "./materialize.js";
import { TOOL_LOG_DIR, VERIFIER_LOG_DIR, type OracleStep, type Task } from "./task.js";
import { parseVerifierOutput, type VerifierResult } from "./verifier-result.js";
import { killChild } from "../core/kill-child.js";

/**
 * Runs task programs as plain local processes (no sandbox): for tests, `harnessrl tasks check` and trusted built-in
 * suites. Rollouts run the same commands inside the sandbox instead.
 */

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

const DEFAULT_TIMEOUT_MS = 60_000;

/** `env`: the whole environment of the process (default: this process's). */
export function runProcess(argv: readonly string[], cwd: string, timeoutMs = DEFAULT_TIMEOUT_MS, env?: Record<string, string>): Promise<ProcessResult> {
  return new Promise((resolvePromise, reject) => {
    const [cmd, ...args] = argv;
    if (cmd === undefined) {
      reject(new InfraError("empty_command", "empty command"));
      return;
    }
    const child = spawn(cmd, args, { cwd, ...(env ? { env } : {}), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killChild(child, "SIGKILL");
    }, timeoutMs);
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(new InfraError("spawn_failed", `cannot run ${cmd}: ${e.message}`, { cause: e }));
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr, timedOut });
    });
  });
}

/** Installs the verifier into an already-used workspace, runs it locally and parses its result (never throws on bad output). */
export async function verifyLocally(task: Task, workspace: string): Promise<VerifierResult & { process: ProcessResult }> {
  await installVerifier(task, workspace);
  // Trusted local runs (tests, `tasks check`): the tools logged into the workspace, and that log is the record.
  // Rollouts never do this; they install the host's record of the tool calls instead.
  const logs = await readdir(join(workspace, TOOL_LOG_DIR)).catch(() => [] as string[]);
  if (logs.length > 0) await mkdir(join(workspace, VERIFIER_LOG_DIR), { recursive: true });
  for (const name of logs) if (name.endsWith(".jsonl")) await copyFile(join(workspace, TOOL_LOG_DIR, name), join(workspace, VERIFIER_LOG_DIR, name));
  const proc = await runProcess(task.verifier.command, workspace, task.verifier.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const result = parseVerifierOutput(proc.stdout);
  if (proc.timedOut) return { score: 0, subscores: {}, error: "verifier timed out", process: proc };
  return { ...result, process: proc };
}

export interface StepOutcome {
  step: OracleStep;
  output?: ProcessResult;
  /** False when a `run` step exited non-zero or its stdout lacked `expect`. */
  ok: boolean;
}

/** Applies oracle steps in a workspace with `sh -c` and direct file writes, as an agent's shell and file tools would. */
export async function applyStepsLocally(steps: OracleStep[], workspace: string): Promise<StepOutcome[]> {
  const out: StepOutcome[] = [];
  for (const step of steps) {
    if (step.kind === "write") {
      await writeFileMap(workspace, { [step.path]: step.content });
      out.push({ step, ok: true });
      continue;
    }
    const output = await runProcess(["sh", "-c", step.command], workspace);
    const ok = output.code === 0 && (step.expect === undefined || output.stdout.includes(step.expect));
    out.push({ step, output, ok });
  }
  return out;
}
