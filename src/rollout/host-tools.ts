import { posix } from "node:path";
import type { Sandbox, SandboxBackend, SandboxLimits } from "../sandbox/types.js";
import { workspaceSeedOf } from "../tasks/materialize.js";
import { toolStubProgram } from "../tasks/programs/tool-stub.js";
import { TOOL_LOG_DIR, VERIFIER_LOG_DIR, type Task } from "../tasks/task.js";

/** Per tool call: output kept, and the time a call may take. */
const TOOL_OUTPUT_LIMIT = 64 * 1024;
const TOOL_TIMEOUT_MS = 10_000;
/** Argument files a call may bring along (the stub sends at most 256 KiB each). */
const MAX_ARG_FILES = 8;
const MAX_CALLS = 10_000;

interface ToolRequest {
  tool: string;
  args: string[];
  files: Record<string, string>;
}

function parseRequest(text: string): ToolRequest | null {
  try {
    const v = JSON.parse(text) as Partial<ToolRequest>;
    if (typeof v.tool !== "string" || !Array.isArray(v.args) || !v.args.every((a) => typeof a === "string")) return null;
    const files = v.files && typeof v.files === "object" ? v.files : {};
    if (Object.keys(files).length > MAX_ARG_FILES || !Object.values(files).every((f) => typeof f === "string")) return null;
    return { tool: v.tool, args: v.args, files };
  } catch {
    return null;
  }
}

/**
 * The tools whose calls feed rewards (`task.metadata.hostTools`), run out of the agent's reach: a second sandbox
 * seeded with the task's own files runs each call, and its workspace's tool log is the record the verifier gets. The
 * agent's workspace holds stubs that forward argv through a host service socket. The agent can call the tools as
 * often as it likes (each call really runs) but cannot add, change or remove a recorded call by writing files.
 */
export class HostTools {
  private calls = 0;
  private constructor(
    private readonly tools: Set<string>,
    private readonly sandbox: Sandbox,
  ) {}

  /** Null when the task has no host tools. */
  static async open(task: Task, backend: SandboxBackend, limits: SandboxLimits, labels: Record<string, string>): Promise<HostTools | null> {
    const tools = task.metadata.hostTools ?? [];
    if (tools.length === 0) return null;
    const seed = workspaceSeedOf(task);
    const sandbox = await backend.create({
      workspaceFiles: seed.files,
      limits: { memoryBytes: Math.min(limits.memoryBytes, 512 * 1024 ** 2), maxPids: 64, wallClockMs: limits.wallClockMs },
      labels: { ...labels, role: "host-tools" },
    });
    try {
      for (const rel of seed.executables) await sandbox.writeFile(rel, seed.files[rel]!, { mode: 0o755 });
    } catch (e) {
      await sandbox.destroy().catch(() => undefined);
      throw e;
    }
    return new HostTools(new Set(tools), sandbox);
  }

  /** Serves the tools to `agentSandbox` and puts the stubs where the tool programs were. */
  async attach(agentSandbox: Sandbox): Promise<void> {
    const socket = await agentSandbox.serve("tools", (request) => this.handle(request));
    for (const tool of this.tools) await agentSandbox.writeFile(tool, toolStubProgram(tool, socket), { mode: 0o755 });
  }

  private async handle(text: string): Promise<string> {
    const req = parseRequest(text);
    if (!req) return JSON.stringify({ error: "bad request" });
    if (!this.tools.has(req.tool)) return JSON.stringify({ error: `unknown tool ${req.tool}` });
    if (++this.calls > MAX_CALLS) return JSON.stringify({ error: "too many tool calls" });
    const args = [...req.args];
    // Argument files arrive as content: written into the tool sandbox, the argument names that copy.
    for (const [index, b64] of Object.entries(req.files)) {
      const i = Number(index);
      if (!Number.isInteger(i) || i < 0 || i >= args.length) continue;
      const rel = posix.join(".harnessrl", "tool-inputs", `${this.calls}-${i}`);
      await this.sandbox.writeFile(rel, Buffer.from(b64, "base64"));
      args[i] = rel;
    }
    const r = await this.sandbox.exec([`./${req.tool}`, ...args], { proxy: false, timeoutMs: TOOL_TIMEOUT_MS, stdoutLimit: TOOL_OUTPUT_LIMIT, stderrLimit: TOOL_OUTPUT_LIMIT });
    return JSON.stringify({ stdout: r.stdout, stderr: r.stderr + (r.timedOut ? `${req.tool}: timed out\n` : ""), code: r.exitCode ?? 1 });
  }

  /** The record of the calls, keyed by where the verifier reads it (under VERIFIER_LOG_DIR). */
  async records(): Promise<Record<string, Uint8Array>> {
    const out: Record<string, Uint8Array> = {};
    const paths = await this.sandbox.listFiles(TOOL_LOG_DIR).catch(() => [] as string[]);
    for (const rel of paths) {
      const name = posix.relative(TOOL_LOG_DIR, rel);
      if (!name.endsWith(".jsonl") || name.includes("/")) continue;
      out[`${VERIFIER_LOG_DIR}/${name}`] = await this.sandbox.readFile(rel);
    }
    return out;
  }

  destroy(): Promise<void> {
    return this.sandbox.destroy();
  }
}
