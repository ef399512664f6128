import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { InfraError } from "../core/errors.js";
import { killChild } from "../core/kill-child.js";

/**
 * A private redis-server for tests, benchmarks and single-machine clusters: bound to one address, a random password
 * (`requirepass`, so nodes authenticate), its data in `dir` (append-only file on, so a restart keeps the queue).
 * `netns` runs it inside a network namespace (`ip netns exec`), for the namespace tests.
 */
export interface RedisServerOptions {
  dir: string;
  host?: string;
  /** 0 (default): a free port, found by binding one first. */
  port?: number;
  password?: string;
  netns?: string;
  /** Where redis-server is (default: on PATH). */
  binary?: string;
}

export interface RedisServerHandle {
  /** `redis://:<password>@<host>:<port>` */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly password: string;
  /** Stops it (SIGTERM, then SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Kills it at once (fault injection: a crash without a final save). */
  kill(): Promise<void>;
  /** Starts it again on the same port and data directory (after stop or kill). */
  restart(): Promise<void>;
}

/** A port nobody listens on now, on `host` (a race with other binders is possible but unlikely on a private address). */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once("exit", () => r()));
}

export async function startRedisServer(options: RedisServerOptions): Promise<RedisServerHandle> {
  const host = options.host ?? "127.0.0.1";
  const password = options.password ?? randomBytes(16).toString("hex");
  mkdirSync(options.dir, { recursive: true });
  // In a namespace the port is free by construction (nothing else listens there); on the host, probe one.
  const port = options.port || (options.netns ? 6379 : await freePort(host));
  const args = ["--bind", host, "--port", String(port), "--requirepass", password, "--dir", options.dir, "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--protected-mode", "no", "--daemonize", "no", "--logfile", ""];
  const binary = options.binary ?? "redis-server";
  const argv = options.netns ? ["ip", "netns", "exec", options.netns, binary, ...args] : [binary, ...args];
  let child: ChildProcess | null = null;
  let stderr = "";

  const start = async (): Promise<void> => {
    stderr = "";
    const c = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "ignore", "pipe"] });
    child = c;
    c.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-2000)));
    const spawnError = new Promise<Error>((resolve) => c.once("error", resolve));
    // Ready when it answers an authenticated PING; bounded in time.
    const deadline = Date.now() + 15_000;
    for (let i = 0; Date.now() < deadline && i < 300; i++) {
      const failed = await Promise.race([spawnError, sleep(50).then(() => null)]);
      if (failed) throw new InfraError("redis_start_failed", `cannot start ${binary}: ${failed.message} (install the Debian package redis-server: npm run setup)`);
      if (c.exitCode !== null) break;
      if (await pingOnce(host, port, password, options.netns)) return;
    }
    killChild(c, "SIGKILL");
    throw new InfraError("redis_start_failed", `redis-server on ${host}:${port} did not come up: ${stderr.trim().slice(-500)}`);
  };
  const stopWith = async (signal: NodeJS.Signals): Promise<void> => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    killChild(c, signal);
    const t = setTimeout(() => killChild(c, "SIGKILL"), 5000);
    await exited(c);
    clearTimeout(t);
  };
  await start();
  return {
    url: `redis://:${password}@${host}:${port}`,
    host,
    port,
    password,
    stop: () => stopWith("SIGTERM"),
    kill: () => stopWith("SIGKILL"),
    restart: async () => {
      await stopWith("SIGTERM");
      await start();
    },
  };
}

/** One authenticated PING; false on any failure. From the host, a namespaced server is reached by `ip netns exec`. */
async function pingOnce(host: string, port: number, password: string, netns: string | undefined): Promise<boolean> {
  if (netns) {
    const { spawnSync } = await import("node:child_process");
    const r = spawnSync("ip", ["netns", "exec", netns, "redis-cli", "-h", host, "-p", String(port), "--no-auth-warning", "-a", password, "ping"], { encoding: "utf8", timeout: 2000 });
    return r.stdout.trim() === "PONG";
  }
  const client = new Redis({ host, port, password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}
