import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll } from "vitest";
import { BwrapBackend } from "../../src/sandbox/bwrap/backend.js";
import { killChild } from "../../src/core/kill-child.js";

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const DIST_SANDBOX = join(REPO_ROOT, "dist", "sandbox", "index.js");
/** Spawned control planes fill the registries as the CLI does (nothing registers on import). */
export const DIST_BUILTINS = join(REPO_ROOT, "dist", "builtins.js");

export const LIMITS = { memoryBytes: 512 * 1024 * 1024, maxPids: 256, wallClockMs: 120_000 };

export function tempRoot(prefix: string): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), `hrl-${prefix}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * A bwrap backend with no warm pool (every create is a cold start, so a test sees exactly its own sandboxes) over a
 * state root of its own, opened before the enclosing describe block's tests and closed, root removed, after them.
 */
export function useColdBwrapBackend(prefix: string): { readonly root: string; readonly backend: BwrapBackend } {
  const root = tempRoot(prefix);
  let backend: BwrapBackend | undefined;
  beforeAll(async () => {
    backend = await BwrapBackend.open({ stateRoot: root.path, pool: { size: 0 } });
  });
  afterAll(async () => {
    try {
      await backend?.close();
    } finally {
      root.remove();
    }
  });
  return {
    root: root.path,
    get backend(): BwrapBackend {
      if (!backend) throw new Error("the bwrap backend opens in beforeAll; use it inside a test");
      return backend;
    },
  };
}

/** A real HTTP server on 127.0.0.1:0 standing in for the capture proxy; records the paths it was asked for. */
export interface StandInProxy {
  port: number;
  paths: string[];
  close(): Promise<void>;
}

export async function startStandInProxy(): Promise<StandInProxy> {
  const paths: string[] = [];
  const server: Server = createServer((req, res) => {
    paths.push(req.url ?? "");
    res.setHeader("content-type", "text/plain");
    res.end(`proxy-ok ${req.url ?? ""}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const addr = server.address();
  if (addr === null || typeof addr === "string") throw new Error("no port");
  return {
    port: addr.port,
    paths,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * bash one-liner doing `GET <path>` against $HARNESSRL_PROXY_URL over /dev/tcp: no node startup per request, so many
 * sandboxes can talk to the proxy at once on two cores.
 */
export function proxyGetScript(path: string): string {
  return [
    'u=${HARNESSRL_PROXY_URL#http://}; host=${u%:*}; port=${u##*:}',
    'exec 3<>"/dev/tcp/$host/$port" || exit 7',
    `printf 'GET ${path} HTTP/1.0\\r\\nHost: proxy\\r\\n\\r\\n' >&3`,
    "cat <&3",
  ].join("\n");
}

/** bash: try a TCP connection and print "connected" or "failed". */
export function tcpProbeScript(host: string, port: number): string {
  return `if exec 3<>/dev/tcp/${host}/${port}; then echo connected; else echo failed; fi 2>/dev/null`;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const controlPlanes = new Set<ChildProcess>();
// A failing assertion must not leave a stand-in control plane (and its sandbox) running after the test run.
process.on("exit", () => {
  for (const c of controlPlanes) killChild(c, "SIGKILL");
});

/** Runs a node ESM snippet as a separate control-plane process; resolves when it prints `line` on stdout. */
export function spawnControlPlane(code: string, readyPrefix: string): Promise<{ pid: number; line: string; kill: () => void; exited: Promise<void> }> {
  const child = spawn(process.execPath, ["--input-type=module", "-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  controlPlanes.add(child);
  // A SIGKILLed process is not gone at once (a thread may be in an uninterruptible syscall): reapers must wait for this.
  const exited = new Promise<void>((resolveExit) => child.once("exit", () => resolveExit()));
  child.on("exit", () => controlPlanes.delete(child));
  return new Promise((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => reject(new Error("control plane did not get ready")), 30_000);
    child.stdout.on("data", (c: Buffer) => {
      buf += c.toString();
      const line = buf.split("\n").find((l) => l.startsWith(readyPrefix));
      if (line) {
        clearTimeout(timer);
        resolve({ pid: child.pid ?? -1, line, kill: () => killChild(child, "SIGKILL"), exited });
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`control plane exited early (${code}): ${buf}`));
    });
  });
}

/**
 * Host processes whose command line contains `id`: a sandbox's id (bwrap's arguments carry its state path), or any
 * other text that marks a kind of process.
 */
export function hostProcessesMentioning(id: string): number[] {
  return readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        return readFileSync(`/proc/${n}/cmdline`, "utf8").includes(id);
      } catch {
        return false;
      }
    })
    .map(Number);
}
