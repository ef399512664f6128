/**
 * The exec agent: one per sandbox, bubblewrap's first process (pid 2, under bwrap's init), run by the host's node:
 *   node main.js <bridge socket path>
 * It runs the control plane's commands (frames on stdin/stdout, see protocol.ts), streams their output back, and
 * hosts the proxy forwarder, so namespaces, mounts and node are paid once per sandbox instead of once per exec.
 *
 * Cleanup rules, per exec: when it is the sandbox's only exec, its end (or its timeout) kills every other process in
 * the PID namespace (`kill(-1)`: background leftovers, setsid'd and double-forked ones included); next to other execs,
 * only its own tree is killed (procs.ts). The exit report is sent once none of it runs any more.
 * Node built-ins only: the build bundles this directory into one CommonJS file, dist/sandbox/agent/main.cjs
 * (scripts/bundle.mjs), which every sandbox mounts: one file and no ES module loader is ~22 ms less CPU per sandbox
 * (docs/sandbox.md).
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { Forwarder } from "./forwarder.js";
import { inPrivatePidNamespace, killExecTree, sweepNamespace } from "./procs.js";
import { FrameDecoder, FrameType, encodeFrame, encodeJson, parseJson } from "./protocol.js";
import type { ErrorReport, ExecRequest, ExitReport, ProxyConfig, ReadyReport } from "./protocol.js";

/** Environment marker of an exec's processes: finds those that left its session and were orphaned. */
const EXEC_MARKER = "HARNESSRL_EXEC_ID";
/** After the leader exits and its tree is killed, how long stray holders of its stdout/stderr may keep them open. */
const CLOSE_GRACE_MS = 2000;
/**
 * Output relayed between two garbage collections. Every chunk read from a command is a fresh off-heap buffer that V8
 * would otherwise let pile up to ~64 MB before collecting, all of it charged to the sandbox's memory.
 */
const GC_EVERY_BYTES = 4 * 1024 * 1024;
/** Exec id of the agent's own warm-up command; the host numbers its execs from 1. */
const WARM_UP_ID = 0;

interface Running {
  id: number;
  request: ExecRequest;
  child: ChildProcess | undefined;
  /** Stdin that arrived before the command was started. */
  stdin: Buffer | undefined;
  killed: boolean;
  proxyHeld: boolean;
  closed: Promise<void> | undefined;
}

const forwarder = new Forwarder(process.argv[2] ?? "");
const killAllAllowed = inPrivatePidNamespace();
const execs = new Map<number, Running>();
/** A namespace sweep in progress: commands start after it, or kill(-1) would take them too. */
let sweeping: Promise<void> = Promise.resolve();
let onWarmedUp: () => void = () => undefined;

/** `gc` exists when node runs with --expose-gc (the launcher passes it). */
const collect = (globalThis as { gc?: (options: { type: "minor" | "major" }) => void }).gc;
let relayedSinceGc = 0;
let youngCollections = 0;

function send(frame: Buffer): void {
  process.stdout.write(frame);
}

/** Command output streams paused until the control pipe drains: a command writing faster than the host reads blocks. */
const pausedForDrain = new Set<Readable>();

function resumePaused(): void {
  for (const stream of pausedForDrain) stream.resume();
  pausedForDrain.clear();
}

function relay(type: FrameType, id: number, chunk: Buffer, source: Readable): void {
  if (!process.stdout.write(encodeFrame(type, id, chunk)) && !pausedForDrain.has(source)) {
    source.pause();
    pausedForDrain.add(source);
    if (pausedForDrain.size === 1) process.stdout.once("drain", resumePaused);
  }
  relayedSinceGc += chunk.length;
  if (relayedSinceGc >= GC_EVERY_BYTES && collect) {
    relayedSinceGc = 0;
    // Buffers that survived into the old generation are only freed by a full collection: one in eight.
    collect({ type: ++youngCollections % 8 === 0 ? "major" : "minor" });
  }
}

function diagnose(message: string): void {
  process.stderr.write(`harnessrl agent: ${message}\n`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Kills what the exec left: the whole namespace when it runs alone, else its own tree. */
function killLeftovers(run: Running): Promise<void> {
  if (execs.size === 1 && execs.has(run.id)) {
    sweeping = sweepNamespace(killAllAllowed).then((ok) => {
      if (!ok) diagnose("processes survived the sweep");
    });
    return sweeping;
  }
  const leader = run.child?.pid;
  if (leader === undefined) return Promise.resolve();
  return killExecTree(leader, `${EXEC_MARKER}=${run.id}`).then((ok) => {
    if (!ok) diagnose(`processes of exec ${run.id} survived the kill`);
  });
}

function finish(run: Running, report: ExitReport): void {
  if (!execs.delete(run.id)) return;
  if (run.proxyHeld) forwarder.release();
  send(encodeJson(FrameType.exit, run.id, report));
  if (run.id === WARM_UP_ID) onWarmedUp();
}

async function leaderExited(run: Running, report: ExitReport): Promise<void> {
  await killLeftovers(run);
  const closed = run.closed ?? Promise.resolve();
  const { stdout, stderr } = run.child ?? {};
  while (await Promise.race([closed.then(() => false), sleep(CLOSE_GRACE_MS).then(() => true)])) {
    // Output still waiting for the host to read it is not a stray holder's doing: keep relaying it.
    if ((stdout && pausedForDrain.has(stdout)) || (stderr && pausedForDrain.has(stderr))) continue;
    stdout?.destroy();
    stderr?.destroy();
    break;
  }
  finish(run, report);
}

function spawnFailed(run: Running, e: NodeJS.ErrnoException): void {
  const program = run.request.argv[0] ?? "";
  let code = 126;
  let why = e.code ?? e.message;
  if (e.code === "ENOENT") {
    // Node reports a missing working directory the same way as a missing program.
    if (existsSync(run.request.cwd)) {
      code = 127;
      why = "not found";
    } else {
      code = 1;
      why = `cannot change to directory ${run.request.cwd}`;
    }
  } else if (e.code === "EACCES") {
    why = "permission denied";
  }
  send(encodeFrame(FrameType.stderr, run.id, `harnessrl-sandbox: cannot run ${program}: ${why}\n`));
  void (async () => {
    await killLeftovers(run);
    finish(run, { code, signal: null });
  })();
}

/**
 * When the sandbox runs out of memory, the kernel should kill a command, not this agent: the agent's death ends every
 * process of the sandbox and costs the next exec a cold start. Raising a process's `oom_score_adj` needs no privilege
 * (lowering the agent's own would). Its children inherit the value; what the command forks in the microseconds
 * before this write keeps the default.
 */
function preferAsOomVictim(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/oom_score_adj`, "1000");
  } catch {
    // No /proc or not permitted: the kernel's own choice stands.
  }
}

function startCommand(run: Running): void {
  const { argv, cwd, env, stdin } = run.request;
  const [file = "", ...args] = argv;
  let child: ChildProcess;
  try {
    // detached: a session of its own, which is how its tree is told apart from other execs'.
    child = spawn(file, args, { cwd, env: { ...env, [EXEC_MARKER]: String(run.id) }, detached: true, stdio: [stdin ? "pipe" : "ignore", "pipe", "pipe"] });
  } catch (e) {
    spawnFailed(run, e as NodeJS.ErrnoException);
    return;
  }
  run.child = child;
  if (child.pid !== undefined) {
    preferAsOomVictim(child.pid);
    send(encodeFrame(FrameType.started, run.id));
  }
  run.closed = new Promise((resolve) => child.once("close", () => resolve()));
  const { stdout, stderr } = child;
  stdout?.on("data", (c: Buffer) => relay(FrameType.stdout, run.id, c, stdout));
  stderr?.on("data", (c: Buffer) => relay(FrameType.stderr, run.id, c, stderr));
  child.on("error", (e: NodeJS.ErrnoException) => {
    if (child.pid === undefined) spawnFailed(run, e);
  });
  child.on("exit", (code, signal) => void leaderExited(run, { code, signal }));
  if (child.stdin) {
    child.stdin.on("error", () => {
      // the command may exit without reading its input (EPIPE)
    });
    if (run.stdin !== undefined) child.stdin.end(run.stdin);
  }
  if (run.killed) void killLeftovers(run);
}

async function startExec(id: number, request: ExecRequest): Promise<void> {
  const run: Running = { id, request, child: undefined, stdin: undefined, killed: false, proxyHeld: false, closed: undefined };
  execs.set(id, run);
  await sweeping;
  if (run.killed) return finish(run, { code: null, signal: "SIGKILL" });
  if (request.proxy) {
    try {
      await forwarder.acquire();
      run.proxyHeld = true;
    } catch (e) {
      execs.delete(id);
      const report: ErrorReport = { kind: "bridge", message: `proxy forwarder cannot listen: ${e instanceof Error ? e.message : String(e)}` };
      send(encodeJson(FrameType.error, id, report));
      return;
    }
  }
  startCommand(run);
}

function onFrame(type: number, id: number, payload: Buffer): void {
  switch (type) {
    case FrameType.exec:
      void startExec(id, parseJson<ExecRequest>(payload));
      return;
    case FrameType.stdin: {
      const run = execs.get(id);
      if (!run) return;
      // The payload is a view of the decoder's buffer: copy what has to wait.
      if (run.child?.stdin) run.child.stdin.end(payload);
      else run.stdin = Buffer.from(payload);
      return;
    }
    case FrameType.kill: {
      const run = execs.get(id);
      if (!run || run.killed) return;
      run.killed = true;
      if (run.child?.pid !== undefined) void killLeftovers(run);
      return;
    }
    case FrameType.proxy:
      forwarder.configure(parseJson<ProxyConfig>(payload).port);
      return;
    default:
      throw new Error(`unknown frame type ${type}`);
  }
}

const decoder = new FrameDecoder(onFrame);
process.stdin.on("data", (chunk: Buffer) => {
  try {
    decoder.push(chunk);
  } catch (e) {
    diagnose(`broken control stream: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(70);
  }
});
// The control plane closed the channel (destroy or exit): nothing may outlive the agent.
process.stdin.on("end", () => {
  void sweepNamespace(killAllAllowed).then(() => process.exit(0));
});
process.stdout.on("error", () => process.exit(0));
// `pkill node` / `killall node` in a harness must not take the sandbox down with it; SIGKILL still does.
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, () => diagnose(`ignored ${signal}`));

/**
 * One throwaway command through the whole exec path (exec id 0, which the host ignores) before reporting ready: node
 * compiles and initialises the spawn, stream and /proc code lazily, which would otherwise cost the first real exec
 * several milliseconds, and a pooled sandbox's first exec is what its start is measured by.
 */
function warmUp(): Promise<void> {
  const request: ExecRequest = { argv: ["true"], cwd: "/", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, stdin: false, proxy: false };
  return new Promise((resolve) => {
    onWarmedUp = resolve;
    onFrame(FrameType.exec, WARM_UP_ID, Buffer.from(JSON.stringify(request)));
  });
}

/** Warms up, then reports ready. Not top-level await: the build bundles this file as CommonJS (scripts/bundle.mjs). */
async function start(): Promise<void> {
  await warmUp();
  await forwarder.warmUp();
  const threads = Number(/^Threads:\s+(\d+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0);
  const ready: ReadyReport = { pid: process.pid, threads };
  send(encodeJson(FrameType.ready, 0, ready));
}

void start();
