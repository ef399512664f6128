import { spawn } from "node:child_process";
import { errorMessage } from "../../core/errors.js";
import { keepTail, type LaunchExit, type LaunchSpec, type Launched } from "./types.js";
import { killChild } from "../../core/kill-child.js";

/**
 * Starts `spec` as a child of this process, with pipes. Used where the launcher process is not available (not built,
 * cannot start) and by the launcher process itself. From a large process each spawn costs a fork of its whole
 * address space: launcher.ts says why the control plane avoids it.
 */
export function launchDirect(spec: LaunchSpec): Launched {
  // detached: the chain gets a session of its own (see launcher/main.ts: nothing a sandbox starts shares our group).
  const child = spawn(spec.file, spec.args, { cwd: spec.cwd, env: spec.env, detached: true, stdio: spec.fd3 ? ["pipe", "pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe"] });
  const fd3 = child.stdio[3];
  if (spec.fd3 && fd3 && "end" in fd3) {
    // Written and closed at once (a few hundred bytes fit the socket buffer): bwrap reads it to EOF at startup.
    fd3.on("error", () => undefined); // a launch chain that died before reading: reported through its exit
    fd3.end(spec.fd3, () => fd3.destroy());
  }
  let diagnostics: Buffer = Buffer.alloc(0);
  child.stderr?.on("data", (c: Buffer) => (diagnostics = keepTail(diagnostics, c)));
  child.stdin?.on("error", () => {
    // the process is gone; its exit is reported below
  });
  let ended = false;
  const exited = new Promise<LaunchExit>((resolve) => {
    const done = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (ended) return;
      ended = true;
      resolve({ code, signal, diagnostics: diagnostics.toString("utf8") });
    };
    child.on("error", (e) => {
      diagnostics = keepTail(diagnostics, `cannot start the sandbox: ${errorMessage(e)}\n`);
      done(null, null);
    });
    // 'close': all of stdout has been read, so everything the process wrote has been delivered.
    child.on("close", done);
  });
  return {
    write(chunk) {
      if (!ended && child.stdin?.writable) child.stdin.write(chunk);
    },
    onOutput(listener) {
      child.stdout?.on("data", listener);
    },
    exited,
    kill() {
      if (ended) return;
      try {
        killChild(child, "SIGKILL");
      } catch {
        // already gone
      }
    },
  };
}
