/**
 * The sandbox launcher: a small long-lived child of the control plane that starts sandboxes' launch chains for it.
 *
 * Why a separate process: a spawn forks the spawning process, and Node waits in `spawn()` until the child has exec'd.
 * The control plane holds the llama.cpp engine and the proxy (hundreds of MB, a dozen threads): measured in a
 * 16-rollout quickstart batch, its 76 sandbox spawns blocked its event loop for 7.7 s of a 40 s batch (100 ms each on
 * a loaded 2-core machine), stalling the engine and the proxy for every rollout in flight. From here a spawn forks a
 * ~40 MB process and blocks only this one.
 *
 * Each process gets one socket as both its stdin and its stdout (`exec 1>&0`): this end of it is created without
 * ever being read here, then handed to the control plane with the `spawned` message, so no byte the process writes
 * can be consumed before the control plane holds the channel. Stderr stays here; its tail goes with `exited`.
 * Exits when the control plane goes (IPC disconnect), SIGKILLing what it started first (bwrap's --die-with-parent
 * would take the sandboxes down with this process anyway).
 *
 * Each chain starts in a session of its own (`detached`): the stages before bwrap's own setsid (the cgroup wrapper,
 * setpriv, the outer bwrap) would otherwise sit in the control plane's process group, where anything that signals
 * "its group" (kill(0), a terminal's ^C, a CI runner's group kill) reaches both ways.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { isToLauncher, type ExitedReport, type SpawnRequest, type SpawnedReport } from "./protocol.js";
import { keepTail } from "./types.js";
import { killChild } from "../../core/kill-child.js";

/** Makes the shared socket on fd 0 the process's stdout too, then becomes the requested program. */
const DUP_STDOUT = 'exec 1>&0; exec "$@"';

const children = new Map<number, ChildProcess>();

function reply(message: SpawnedReport | ExitedReport, handle?: unknown): void {
  if (!process.connected) return;
  // The handle is closed here once it has been sent (keepOpen is off): the control plane's copy is the only one.
  process.send?.(message, handle as never, undefined, () => undefined);
}

function start(req: SpawnRequest): void {
  let child: ChildProcess;
  let diagnostics: Buffer = Buffer.alloc(0);
  const exited = (code: number | null, signal: NodeJS.Signals | null): void => {
    children.delete(req.id);
    reply({ t: "exited", id: req.id, code, signal, diagnostics: diagnostics.toString("utf8") });
  };
  try {
    child = spawn("/bin/sh", ["-c", DUP_STDOUT, "harnessrl-launch", req.file, ...req.args], {
      cwd: req.cwd,
      env: req.env,
      detached: true,
      stdio: ["pipe", "ignore", "pipe", req.fd3 !== undefined ? "pipe" : "ignore"],
    });
  } catch (e) {
    diagnostics = keepTail(diagnostics, `cannot start the sandbox: ${e instanceof Error ? e.message : String(e)}\n`);
    exited(null, null);
    return;
  }
  children.set(req.id, child);
  child.stderr?.on("data", (c: Buffer) => (diagnostics = keepTail(diagnostics, c)));
  const fd3 = child.stdio[3];
  if (req.fd3 !== undefined && fd3 && "end" in fd3) {
    fd3.on("error", () => undefined); // a chain that died before reading: reported through its exit
    fd3.end(Buffer.from(req.fd3, "base64"), () => fd3.destroy());
  }
  let ended = false;
  const done = (code: number | null, signal: NodeJS.Signals | null): void => {
    if (ended) return;
    ended = true;
    exited(code, signal);
  };
  child.on("error", (e) => {
    diagnostics = keepTail(diagnostics, `cannot start the sandbox: ${e.message}\n`);
    done(null, null);
  });
  child.on("close", done);
  // The stdin socket is created write-only here, so it is never read before it leaves.
  if (child.pid !== undefined && child.stdin) reply({ t: "spawned", id: req.id }, child.stdin);
}

process.on("message", (m: unknown) => {
  if (!isToLauncher(m)) return;
  if (m.t === "spawn") {
    start(m);
    return;
  }
  // A kill can arrive in the same IPC read as its spawn, before a failed spawn's error is reported: killChild.
  const child = children.get(m.id);
  if (child) killChild(child, "SIGKILL");
});

process.on("disconnect", () => {
  for (const child of children.values()) killChild(child, "SIGKILL");
  process.exit(0);
});
