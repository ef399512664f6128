import { posix } from "node:path";
import type { Sandbox, SandboxBackend, SandboxLimits } from "../sandbox/types.js";
import { workspaceSeedOf } from "../tasks/materialize.js";
import { nativeCounters, nativeTool } from "../tasks/programs/native.js";
import { toolStubProgram } from "../tasks/programs/tool-stub.js";
import { runInVm } from "../tasks/programs/vm-run.js";
import { BoundedOutput } from "../sandbox/bounded-output.js";
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

/** CPU a natively run tool call may take before the call is left to the real program in the tool sandbox. */
const NATIVE_TIMEOUT_MS = 250;
/** Where the tool sandbox's workspace is, as its programs see it (bwrap; the native run mirrors it). */
const TOOL_WORKSPACE = "/workspace";

/**
 * The tools whose calls feed rewards (`task.metadata.hostTools`), run out of the agent's reach: a second sandbox
 * seeded with the task's own files runs each call, and its workspace's tool log is the record the verifier gets. The
 * agent's workspace holds stubs that forward argv through a host service socket. The agent can call the tools as
 * often as it likes (each call really runs) but cannot add, change or remove a recorded call by writing files.
 *
 * Our own tool programs (native.ts: `calc`) run in the control plane instead (vm-run.ts): same program text, same
 * output and log, no sandbox and no process. The tool sandbox is then started only if some call cannot be run that
 * way (too slow, or using something the native run does not offer); from that call on, every call goes to it, its
 * log seeded with the calls recorded so far, so the record stays one ordered log whichever way each call ran.
 */
export class HostTools {
  private calls = 0;
  /** Log files of natively run calls, by workspace-relative path. */
  private readonly nativeLogs = new Map<string, Buffer>();
  private sandbox: Promise<Sandbox> | undefined;
  /** Why the tool sandbox could not be started when a call needed it: the rollout's failure is then ours, not the policy's. */
  private failure: unknown;

  private constructor(
    private readonly tools: Set<string>,
    /** The task's files where the tool sandbox has them, for natively run calls. */
    private readonly seedView: ReadonlyMap<string, Buffer>,
    private readonly open: () => Promise<Sandbox>,
    /** Tool name → program text, for the tools run natively while `sandbox` is unset. */
    private readonly native: Map<string, string>,
  ) {}

  /** Null when the task has no host tools. */
  static async open(task: Task, backend: SandboxBackend, limits: SandboxLimits, labels: Record<string, string>): Promise<HostTools | null> {
    const tools = task.metadata.hostTools ?? [];
    if (tools.length === 0) return null;
    const native = new Map<string, string>();
    for (const tool of tools) {
      const text = nativeTool(task, tool);
      if (text !== undefined) native.set(tool, text);
    }
    const seed = workspaceSeedOf(task);
    const open = async (): Promise<Sandbox> => {
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
      return sandbox;
    };
    const seedView = new Map(Object.entries(seed.files).map(([rel, data]) => [posix.join(TOOL_WORKSPACE, rel), Buffer.from(data)] as const));
    const hostTools = new HostTools(new Set(tools), seedView, open, native);
    // Started at once unless every tool runs natively, so a failing start still fails the rollout up front.
    if (native.size < tools.length) await hostTools.toolSandbox();
    return hostTools;
  }

  /** The tool sandbox, started on first use; from then on every call runs there. */
  private toolSandbox(): Promise<Sandbox> {
    this.sandbox ??= this.open().then(
      async (sandbox) => {
        for (const [rel, data] of this.nativeLogs) await sandbox.writeFile(rel, data);
        return sandbox;
      },
      (e: unknown) => {
        this.failure = e;
        throw e;
      },
    );
    return this.sandbox;
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
    const call = this.calls;
    const args = [...req.args];
    const inputs = new Map<string, Buffer>();
    // Argument files arrive as content: written into the tool sandbox, the argument names that copy.
    for (const [index, b64] of Object.entries(req.files)) {
      const i = Number(index);
      if (!Number.isInteger(i) || i < 0 || i >= args.length) continue;
      const rel = posix.join(".harnessrl", "tool-inputs", `${call}-${i}`);
      inputs.set(rel, Buffer.from(b64, "base64"));
      args[i] = rel;
    }
    const program = this.sandbox ? undefined : this.native.get(req.tool);
    if (program !== undefined) {
      const answer = this.runNative(req.tool, program, args, inputs);
      if (answer !== undefined) return answer;
    }
    const sandbox = await this.toolSandbox();
    for (const [rel, data] of inputs) await sandbox.writeFile(rel, data);
    const r = await sandbox.exec([`./${req.tool}`, ...args], { proxy: false, timeoutMs: TOOL_TIMEOUT_MS, stdoutLimit: TOOL_OUTPUT_LIMIT, stderrLimit: TOOL_OUTPUT_LIMIT });
    return JSON.stringify({ stdout: r.stdout, stderr: r.stderr + (r.timedOut ? `${req.tool}: timed out\n` : ""), code: r.exitCode ?? 1 });
  }

  /** The call's answer as the tool sandbox would give it, or undefined when it must run there. */
  private runNative(tool: string, program: string, args: string[], inputs: Map<string, Buffer>): string | undefined {
    const files = new Map(this.seedView);
    for (const [rel, data] of inputs) files.set(posix.join(TOOL_WORKSPACE, rel), data);
    const r = runInVm(program, {
      args,
      scriptPath: posix.join(TOOL_WORKSPACE, tool),
      cwd: TOOL_WORKSPACE,
      // The tool sandbox holds the task's files, the inputs and the logs; nothing else a tool could want is known here.
      lookup: (path) => {
        const data = files.get(path);
        return data ? { kind: "file", data } : undefined;
      },
      writableDir: posix.join(TOOL_WORKSPACE, TOOL_LOG_DIR),
      timeoutMs: NATIVE_TIMEOUT_MS,
    });
    if (r.status !== "done") {
      nativeCounters.toolFallbacks++;
      return undefined;
    }
    nativeCounters.toolCalls++;
    for (const [path, data] of r.appended) {
      const rel = posix.relative(TOOL_WORKSPACE, path);
      this.nativeLogs.set(rel, Buffer.concat([this.nativeLogs.get(rel) ?? Buffer.alloc(0), data]));
    }
    const stdout = new BoundedOutput(TOOL_OUTPUT_LIMIT);
    const stderr = new BoundedOutput(TOOL_OUTPUT_LIMIT);
    stdout.push(r.stdout);
    stderr.push(r.stderr);
    return JSON.stringify({ stdout: stdout.text(), stderr: stderr.text(), code: r.exitCode });
  }

  /** The record of the calls, keyed by where the verifier reads it (under VERIFIER_LOG_DIR). */
  async records(): Promise<Record<string, Uint8Array>> {
    if (this.failure !== undefined) throw this.failure;
    const out: Record<string, Uint8Array> = {};
    if (!this.sandbox) {
      for (const [rel, data] of this.nativeLogs) {
        const name = posix.relative(TOOL_LOG_DIR, rel);
        if (name.endsWith(".jsonl") && !name.includes("/")) out[`${VERIFIER_LOG_DIR}/${name}`] = data;
      }
      return out;
    }
    const sandbox = await this.sandbox;
    const paths = await sandbox.listFiles(TOOL_LOG_DIR).catch(() => [] as string[]);
    for (const rel of paths) {
      const name = posix.relative(TOOL_LOG_DIR, rel);
      if (!name.endsWith(".jsonl") || name.includes("/")) continue;
      out[`${VERIFIER_LOG_DIR}/${name}`] = await sandbox.readFile(rel);
    }
    return out;
  }

  async destroy(): Promise<void> {
    const sandbox = await this.sandbox?.catch(() => undefined);
    await sandbox?.destroy();
  }
}
