#!/usr/bin/env node
// The quickstart's learning run on a cluster, on one machine: a control-plane network namespace holding Redis (the
// BullMQ queue), Postgres (the central record store) and one `harnessrl serve` (the policy's llama.cpp engine over
// HTTP), and N rollout nodes (`harnessrl node`), each in its own namespace joined by a veth pair, so every rollout's
// job, engine calls and records really cross a network. The quickstart config runs unchanged except for its engine
// (the served one) and a `cluster:` section; the run itself (`harnessrl quickstart`) runs in the control plane's
// namespace, warm start and evaluations included. Needs root (namespaces), a built dist/ and `npm run setup`'s packages.
//
//   node scripts/cluster-quickstart.mjs [--nodes 3] [--capacity 5] [--seed N] [--config FILE] [--run-dir DIR]
//
// Writes the run directory as the quickstart does (summary.json, report.html, metrics) plus cluster/ (the generated
// config, the services' and nodes' logs, cluster.json: which node landed how many rollouts). docs/cluster.md has the
// figures of the recorded run.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { startLocalPostgres } from "./local-postgres.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CLI = join(ROOT, "dist", "cli", "main.js");
const SERVE_PORT = 8500;

function options(argv) {
  const out = { nodes: 3, capacity: 5, seed: undefined, config: join(ROOT, "configs", "quickstart.yaml"), runDir: join(ROOT, "runs", "cluster-quickstart") };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`${k} needs a value`);
    if (k === "--nodes" || k === "--capacity" || k === "--seed") {
      const n = Number(v);
      if (!Number.isInteger(n) || n < (k === "--seed" ? 0 : 1) || n > 64) throw new Error(`${k} ${v}: not a valid count`);
      out[k.slice(2)] = n;
    } else if (k === "--config") out.config = resolve(v);
    else if (k === "--run-dir") out.runDir = resolve(v);
    else throw new Error(`unknown option ${k}`);
  }
  return out;
}

/** The quickstart config with the served engine and a cluster section (and the seed, when given). */
function clusterConfig(text, { engineUrl, queue, store, seed }) {
  const engineLine = /^engine:.*$/m;
  if (!engineLine.test(text)) throw new Error("the config has no one-line `engine:` entry to replace");
  let out = text.replace(engineLine, `engine: { kind: llamacpp-http, url: ${engineUrl} }`);
  if (seed !== undefined) {
    out = out.replace(/^seed: \d+$/m, `seed: ${seed}`).replace(/^(model: \{[^}]*seed: )\d+/m, `$1${seed}`);
  }
  return `${out}\n# Added by scripts/cluster-quickstart.mjs: the rollouts run as jobs on the namespace nodes.\ncluster:\n  queue: ${queue}\n  store: ${store}\n  attempts: 3\n`;
}

/** Starts `argv` behind `prefix` (a namespace's exec prefix), output appended to `logFile`; ready once a line matches `ready`. */
function startIn(prefix, argv, { env, logFile, ready, timeoutMs = 180_000 }) {
  const log = createWriteStream(logFile, { flags: "a" });
  const child = spawn(prefix[0], [...prefix.slice(1), ...argv], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  if (!ready) return { child, ready: Promise.resolve() };
  const readyP = new Promise((res, rej) => {
    let seen = "";
    const t = setTimeout(() => rej(new Error(`${argv.slice(0, 4).join(" ")}: not ready within ${timeoutMs / 1000} s (see ${logFile})`)), timeoutMs);
    const watch = (b) => {
      seen = (seen + b.toString()).slice(-8000);
      if (ready.test(seen)) {
        clearTimeout(t);
        res();
      }
    };
    child.stdout.on("data", watch);
    child.stderr.on("data", watch);
    child.once("exit", (code) => {
      clearTimeout(t);
      rej(new Error(`${argv.slice(0, 4).join(" ")} exited (${code}) before it was ready (see ${logFile})`));
    });
  });
  return { child, ready: readyP };
}

async function stopChild(child, signal = "SIGTERM") {
  // pid undefined: the spawn failed, and kill() would signal our own process group (src/core/kill-child.ts).
  if (!child || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  const t = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await done;
  clearTimeout(t);
}

/** Landed rollouts per node and attempt, from the central store (what trained). */
async function landedByNode(server) {
  // Over the server's unix socket: its TCP address exists only inside the control plane's namespace.
  const c = new pg.Client({ host: server.socketDir, port: server.port, user: "postgres", database: server.database });
  await c.connect();
  try {
    const r = await c.query("SELECT node_id, attempt, count(*)::int AS n FROM rollouts GROUP BY node_id, attempt ORDER BY node_id, attempt");
    return r.rows;
  } finally {
    await c.end();
  }
}

async function main() {
  const o = options(process.argv.slice(2));
  if (process.getuid?.() !== 0) throw new Error("network namespaces need root");
  if (!existsSync(CLI)) throw new Error("dist/ is missing: run `npm run build` first");
  const { createNetnsTopology } = await import(join(ROOT, "dist", "cluster", "netns.js"));
  const { startRedisServer } = await import(join(ROOT, "dist", "cluster", "redis-server.js"));
  const dir = join(o.runDir, "cluster");
  mkdirSync(dir, { recursive: true });
  const say = (line) => console.log(`[cluster-quickstart] ${line}`);
  const topo = createNetnsTopology(o.nodes);
  const children = [];
  let redis;
  let postgres;
  const cleanup = async () => {
    for (const c of children.reverse()) await stopChild(c);
    await postgres?.stop().catch(() => {});
    await redis?.stop().catch(() => {});
    topo.destroy();
  };
  const onSignal = () => {
    say("interrupted: stopping the cluster (the run directory resumes when started again)");
    cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const t0 = Date.now();
    redis = await startRedisServer({ dir: join(dir, "redis"), host: topo.cpAddress, port: 6379, netns: topo.cp });
    postgres = await startLocalPostgres({ netns: topo.cp, listen: topo.cpAddress, log: (l) => say(l) });
    say(`Redis ${topo.cpAddress}:6379, Postgres ${topo.cpAddress}:${postgres.port} in namespace ${topo.cp}`);

    // The service starts on a fresh tiny-1m model; the run pushes its own policy (v1 after the warm start) to it.
    const start = join(dir, "serve-start");
    if (!existsSync(join(start, "config.json"))) {
      const r = spawnSync(process.execPath, [CLI, "model", "init", "--preset", "tiny-1m", "--seed", "0", "--out", start], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      if (r.status !== 0) throw new Error(`model init failed: ${r.stderr}`);
    }
    const tokens = { HARNESSRL_SERVE_TOKEN: randomBytes(18).toString("hex"), HARNESSRL_SERVE_ADMIN_TOKEN: randomBytes(18).toString("hex") };
    const serve = startIn(topo.exec(topo.cp), [process.execPath, CLI, "serve", "--model-dir", start, "--host", topo.cpAddress, "--port", String(SERVE_PORT), "--sequences", "16", "--cache", join(dir, "serve-cache")], { env: tokens, logFile: join(dir, "serve.log"), ready: /engine spec for nodes/ });
    children.push(serve.child);
    await serve.ready;
    const engineUrl = `http://${topo.cpAddress}:${SERVE_PORT}`;
    say(`harnessrl serve at ${engineUrl}`);

    for (let i = 0; i < o.nodes; i++) {
      const node = topo.nodes[i];
      const argv = [process.execPath, CLI, "node", "--node-id", `node${i}`, "--capacity", String(o.capacity), "--dir", join(dir, `node${i}`)];
      // Nodes get the generation token only: loading policies is the trainer's.
      const n = startIn(topo.exec(node.ns), argv, { env: { HARNESSRL_CLUSTER: redis.url, HARNESSRL_SERVE_TOKEN: tokens.HARNESSRL_SERVE_TOKEN, HARNESSRL_SERVE_ADMIN_TOKEN: "" }, logFile: join(dir, `node${i}.log`), ready: /pulling from/ });
      children.push(n.child);
      await n.ready;
      say(`node${i} (${node.address}, capacity ${o.capacity}) pulling`);
    }

    const config = join(dir, "quickstart-cluster.yaml");
    writeFileSync(config, clusterConfig(readFileSync(o.config, "utf8"), { engineUrl, queue: redis.url, store: postgres.url, seed: o.seed }), { mode: 0o600 });
    say(`setup ${((Date.now() - t0) / 1000).toFixed(1)} s; running the quickstart (${config}) in the control plane's namespace`);
    const [bin, ...pre] = topo.exec(topo.cp);
    const run = spawn(bin, [...pre, process.execPath, CLI, "quickstart", "--config", config, "--run-dir", o.runDir], { cwd: ROOT, env: { ...process.env, ...tokens }, stdio: ["ignore", "inherit", "inherit"] });
    children.push(run);
    const code = await new Promise((r) => run.once("exit", (c, s) => r(c ?? (s ? 128 : 1))));
    const byNode = await landedByNode(postgres).catch((e) => ({ error: String(e) }));
    const wall = (Date.now() - t0) / 1000;
    writeFileSync(join(dir, "cluster.json"), JSON.stringify({ nodes: o.nodes, capacity: o.capacity, seed: o.seed ?? null, exitCode: code, wallSeconds: wall, landed: byNode }, null, 2));
    say(`quickstart exited ${code} after ${(wall / 60).toFixed(1)} min; landed rollouts by node: ${JSON.stringify(byNode)}`);
    return code;
  } finally {
    await cleanup();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`[cluster-quickstart] ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
