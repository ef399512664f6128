#!/usr/bin/env node
// A throwaway Postgres server for tests, CI and trying the cluster on one machine: initdb + postgres in a temp dir,
// listening on a free port, with a password-authenticated role and database, removed again by stop(). initdb and
// postgres refuse to run as root, so as root they run as the `postgres` user (Debian's package creates it).
//
//   node scripts/local-postgres.mjs [--port N] [--listen 127.0.0.1] [--dir D]   prints the store URL, runs until Ctrl-C
//
// Library use (tests, scripts): `const pg = await startLocalPostgres(); … pg.url …; await pg.stop();`
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

/** The directory holding initdb and postgres: Debian keeps them under /usr/lib/postgresql/<version>/bin. */
export function postgresBinDir() {
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, "bin", "postgres")))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return join(root, versions[0], "bin");
  }
  const which = spawnSync("sh", ["-c", "command -v postgres"], { encoding: "utf8" });
  if (which.status === 0 && which.stdout.trim() !== "") return join(which.stdout.trim(), "..");
  throw new Error("Postgres is not installed (Debian: apt-get install postgresql, or run npm run setup)");
}

/** uid/gid to run the server as: the `postgres` user when we are root, else ourselves. */
function serverUser() {
  if (process.getuid?.() !== 0) return null;
  const id = (flag) => spawnSync("id", [flag, "postgres"], { encoding: "utf8" });
  const uid = id("-u");
  const gid = id("-g");
  if (uid.status !== 0 || gid.status !== 0) throw new Error("running as root, but there is no `postgres` user to run Postgres as (install Debian's postgresql package)");
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

export function freePort(host = "127.0.0.1") {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, host, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts a Postgres server. Options: `port` (default: a free one), `listen` (listen_addresses, default 127.0.0.1;
 * "*" for nodes in other network namespaces), `dir` (default: a new temp dir), `user` / `password` / `database` of
 * the role nodes log in as (default harnessrl / random / harnessrl), `fsync` (default false: a test server; killing
 * the server process still loses nothing committed, only an OS crash could), `log` (a function for progress lines),
 * `netns` (run the server inside that network namespace, e.g. the control plane's of the namespace cluster; `listen`
 * is then an address there, and the port defaults to 5432 since the namespace's ports are its own).
 */
export async function startLocalPostgres(options = {}) {
  const bin = postgresBinDir();
  const owner = serverUser();
  // As root the server runs as `postgres`, which must reach the directory: /tmp, not a TMPDIR under /root.
  const dir = options.dir ?? mkdtempSync(join(owner ? "/tmp" : tmpdir(), "hrl-pg-"));
  const ownsDir = options.dir === undefined;
  const data = join(dir, "data");
  const sockets = join(dir, "sock");
  mkdirSync(sockets, { recursive: true });
  const user = options.user ?? "harnessrl";
  const password = options.password ?? randomBytes(12).toString("hex");
  const database = options.database ?? "harnessrl";
  const superPassword = randomBytes(12).toString("hex");
  const listen = options.listen ?? "127.0.0.1";
  const log = options.log ?? (() => {});
  const asOwner = owner ? { uid: owner.uid, gid: owner.gid } : {};
  const env = { ...process.env, LC_ALL: "C", HOME: dir };
  if (owner) {
    for (const p of [dir, sockets]) chownSync(p, owner.uid, owner.gid);
  }
  chmodSync(dir, 0o700);

  if (!existsSync(join(data, "PG_VERSION"))) {
    const pwfile = join(dir, "superuser.pw");
    writeFileSync(pwfile, `${superPassword}\n`, { mode: 0o600 });
    if (owner) chownSync(pwfile, owner.uid, owner.gid);
    log(`initdb ${data}`);
    const init = spawnSync(join(bin, "initdb"), ["-D", data, "-U", "postgres", `--pwfile=${pwfile}`, "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C"], {
      ...asOwner,
      env,
      encoding: "utf8",
      timeout: 120_000,
    });
    rmSync(pwfile, { force: true });
    if (init.status !== 0) throw new Error(`initdb failed (exit ${init.status}): ${init.stderr || init.stdout}`);
    // Password logins from any address (nodes in other network namespaces); the unix socket stays trust for the owner.
    const hba = ["local all all trust", "host all all 0.0.0.0/0 scram-sha-256", "host all all ::/0 scram-sha-256", ""].join("\n");
    writeFileSync(join(data, "pg_hba.conf"), hba);
    if (owner) chownSync(join(data, "pg_hba.conf"), owner.uid, owner.gid);
  }

  const server = {
    url: "",
    host: listen === "*" || listen === "0.0.0.0" ? "127.0.0.1" : listen,
    port: options.port ?? 0,
    user,
    password,
    database,
    dir,
    socketDir: sockets,
    process: null,
    /** Stops the server (SIGTERM, then SIGKILL after 10 s) and keeps its data: `resume()` starts it again. */
    async pause() {
      await stopProcess(server.process);
      server.process = null;
    },
    /** Starts the server again on the same port and data (after pause(), or after it was killed). */
    async resume() {
      await launch();
    },
    /** Stops the server and removes its directory (unless `dir` was given). */
    async stop() {
      await server.pause();
      if (ownsDir) rmSync(dir, { recursive: true, force: true });
    },
  };

  const launch = async () => {
    if (server.port === 0) server.port = options.netns ? 5432 : await freePort(server.host);
    const args = ["-D", data, "-p", String(server.port), "-k", sockets, "-c", `listen_addresses=${listen}`, "-c", "max_connections=200"];
    if (!options.fsync) args.push("-c", "fsync=off", "-c", "full_page_writes=off");
    log(`postgres on ${listen}:${server.port}`);
    // In a namespace: nsenter joins it as root and then drops to the server's user (postgres refuses to run as root).
    const child = options.netns
      ? spawn("nsenter", [`--net=/run/netns/${options.netns}`, ...(owner ? [`--setuid=${owner.uid}`, `--setgid=${owner.gid}`] : []), "--", join(bin, "postgres"), ...args], { env, stdio: ["ignore", "ignore", "pipe"] })
      : spawn(join(bin, "postgres"), args, { ...asOwner, env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (b) => {
      stderr = (stderr + b.toString()).slice(-4000);
    });
    server.process = child;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`postgres exited (${child.exitCode}) while starting: ${stderr}`);
      const c = new pg.Client({ host: sockets, port: server.port, user: "postgres", database: "postgres", connectionTimeoutMillis: 2_000 });
      try {
        await c.connect();
        await c.end();
        return;
      } catch (e) {
        await c.end().catch(() => {});
        if (Date.now() > deadline) {
          await stopProcess(child);
          throw new Error(`postgres did not accept connections within 60 s: ${e instanceof Error ? e.message : String(e)}\n${stderr}`);
        }
        await sleep(100);
      }
    }
  };

  // Only a started process: kill() after a failed spawn signals our own process group (src/core/kill-child.ts).
  const killOnExit = () => server.process?.pid !== undefined && server.process.exitCode === null && server.process.kill("SIGKILL");
  process.once("exit", killOnExit);
  try {
    await launch();
    // The role nodes log in as: a password, and its own database (not a superuser).
    const admin = new pg.Client({ host: sockets, port: server.port, user: "postgres", database: "postgres" });
    await admin.connect();
    try {
      const exists = await admin.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [user]);
      const quoted = `"${user.replaceAll('"', '""')}"`;
      const literal = `'${password.replaceAll("'", "''")}'`;
      await admin.query(`${exists.rowCount ? "ALTER" : "CREATE"} ROLE ${quoted} LOGIN PASSWORD ${literal}`);
      const db = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
      if (!db.rowCount) await admin.query(`CREATE DATABASE "${database.replaceAll('"', '""')}" OWNER ${quoted}`);
    } finally {
      await admin.end();
    }
  } catch (e) {
    await server.stop().catch(() => {});
    process.removeListener("exit", killOnExit);
    throw e;
  }
  const stop = server.stop;
  server.stop = async () => {
    process.removeListener("exit", killOnExit);
    await stop();
  };
  server.url = `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${server.host}:${server.port}/${encodeURIComponent(database)}`;
  return server;
}

async function stopProcess(child) {
  if (!child || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  // SIGINT: Postgres's "fast" shutdown (rolls back open transactions, disconnects clients).
  child.kill("SIGINT");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (name) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const port = opt("port");
  const server = await startLocalPostgres({ port: port === undefined ? undefined : Number(port), listen: opt("listen"), dir: opt("dir"), log: (l) => process.stderr.write(`[postgres] ${l}\n`) });
  process.stdout.write(`${server.url}\n`);
  process.stderr.write("[postgres] ready; Ctrl-C stops it and removes its data\n");
  const done = async () => {
    await server.stop();
    process.exit(0);
  };
  process.once("SIGINT", done);
  process.once("SIGTERM", done);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((e) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
