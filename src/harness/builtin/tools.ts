import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, relative, resolve } from "node:path";

/** Tool output handed back to the model is bounded: tiny models have small contexts. */
const MAX_OUTPUT_CHARS = 2_000;

function bound(text: string): string {
  return text.length <= MAX_OUTPUT_CHARS ? text : `${text.slice(0, MAX_OUTPUT_CHARS)}\n[... ${text.length - MAX_OUTPUT_CHARS} more characters]`;
}

export interface ShellResult {
  exitCode: number | null;
  output: string;
}

/** Runs a shell command in the workspace, like every real harness's shell tool. */
export function runShell(command: string, timeoutMs: number, cwd = process.cwd()): Promise<ShellResult> {
  return runArgv(["sh", "-c", command], timeoutMs, cwd);
}

export function runArgv(argv: string[], timeoutMs: number, cwd = process.cwd()): Promise<ShellResult> {
  return new Promise((resolvePromise) => {
    const [cmd, ...args] = argv;
    if (!cmd) {
      resolvePromise({ exitCode: 127, output: "error: empty command" });
      return;
    }
    const child = spawn(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let out = "";
    const onData = (d: Buffer): void => {
      if (out.length < MAX_OUTPUT_CHARS * 2) out += d.toString("utf8");
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      resolvePromise({ exitCode: 127, output: `error: ${e.message}` });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const suffix = signal ? `\n[killed by ${signal}]` : "";
      resolvePromise({ exitCode: code, output: bound(out + suffix) });
    });
  });
}

/** Writes a file inside the workspace; paths escaping it are refused (the sandbox enforces this too). */
export async function writeWorkspaceFile(path: string, content: string, cwd = process.cwd()): Promise<string> {
  const target = isAbsolute(path) ? path : resolve(cwd, path);
  const rel = relative(cwd, target);
  if (rel.startsWith("..") || isAbsolute(rel)) return `error: ${path} is outside the workspace`;
  await mkdir(dirname(target), { recursive: true });
  await writeFile(target, content);
  return `wrote ${Buffer.byteLength(content)} bytes to ${rel}`;
}

/** Parses tool arguments the model produced; models make mistakes, so failures become tool errors, not crashes. */
export function parseArgs(text: string | undefined | null): Record<string, unknown> {
  if (!text) return {};
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** Final machine-readable line every built-in harness prints, so the runner can tell how it ended. */
export function finish(result: { turns: number; status: "done" | "max_turns" | "error"; final?: string; error?: string }): void {
  process.stdout.write(`${JSON.stringify({ harnessrl_result: result })}\n`);
}
