/**
 * `npm run bench:proxy`: what the capture proxy adds on top of the engine. For ~4k-token prompts (multi-turn
 * sessions that extend token-exactly, as harnesses do) it measures, side by side:
 *   - direct: `engine.generate` on the scripted engine with the prompt tokens already computed (no proxy at all);
 *   - proxy: the same conversations as HTTP requests through a proxy in a child process (auth, JSON, validation,
 *     normalisation, token-exact planning, engine call, output parsing, durable SQLite record, response), stream and
 *     non-stream, from a keep-alive HTTP client;
 *   - HTTP floor: a bare node:http server in a child process answering the same requests (interleaved with the proxy
 *     in blocks), i.e. what the HTTP hop between two processes costs by itself.
 * Added latency = proxy percentile − direct percentile over serial calls; throughput = calls/s with concurrent clients.
 * Writes docs/bench/proxy.json and the summary table in docs/proxy.md.
 *
 * Options: --calls N (serial calls per mode, default 1000), --warmup N (uncounted calls first, default 1000), --seconds S (per throughput run, default 4),
 * --concurrency C (default 16), --out FILE, --no-docs, --store sqlite|memory (memory: to see the store's share; the
 * published numbers use sqlite), --profile DIR (CPU profile of the proxy process, for
 * `node --cpu-prof` tooling).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { Agent, request } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { registerBuiltins } from "../builtins.js";
import type { ChatMessage } from "../chat/types.js";
import { createScriptedEngine } from "../engine/scripted/index.js";
import type { SamplingEngine } from "../engine/types.js";
import { DEFAULT_SAMPLING } from "../engine/types.js";
import { createHistoryPlanner } from "../history/index.js";
import { ProxyServer } from "../proxy/index.js";
import { LATEST_SCHEMA_VERSION } from "../store/migrations.js";
import { openStore } from "../store/registry.js";
import { SqliteStore } from "../store/sqlite.js";
import { latencySummary as summary } from "./stats.js";
import { InfraError, UserError } from "../core/errors.js";
import { killChild } from "../core/kill-child.js";

const ANSWER = "Done: the change is applied and the tests pass.";
const TURNS_PER_SESSION = 4;
/** Long-session phase: turns, and how many of the last (largest) turns the reported p50 covers. */
const LONG_TURNS = 60;
const LONG_TAIL = 20;
const SYSTEM = Array.from({ length: 38 }, (_, i) => `Rule ${i + 1}: keep edits small, explain them briefly, and run the tests after every change.`).join("\n");
const TOOL_SPECS = [{ name: "bash", description: "Run a shell command", parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } }];
const TOOLS = TOOL_SPECS.map(({ name, description, parameters }) => ({ type: "function", function: { name, description, parameters } }));

function answer(): { content: string } {
  return { content: ANSWER };
}

/** The conversation of turn `k` (0-based) of a session: ~4k tokens with the byte tokenizer. */
function conversation(session: number, k: number): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: "system", content: SYSTEM }];
  for (let t = 0; t <= k; t++) {
    messages.push({ role: "user", content: `Session ${session}, step ${t}: ${"please update the parser so that it handles nested blocks. ".repeat(4)}` });
    if (t < k) messages.push({ role: "assistant", content: ANSWER });
  }
  return messages;
}

// ---------------------------------------------------------------- server (child process)

/**
 * The floor: a bare node:http server that reads the body, parses the JSON and answers with a response of the proxy's
 * size (a JSON body, or the same SSE events). Latency through it is what any Node HTTP hop between two processes costs
 * on this machine, so the table can say how much of "added" is the proxy's own work.
 */
async function serveFloor(): Promise<void> {
  const { createServer } = await import("node:http");
  const chat = JSON.stringify({ id: "chatcmpl_floor", object: "chat.completion", created: 0, model: "policy", choices: [{ index: 0, message: { role: "assistant", content: ANSWER }, finish_reason: "stop" }], usage: { prompt_tokens: 4000, completion_tokens: 48, total_tokens: 4048 } });
  const events = [{ role: "assistant", content: "" }, { content: ANSWER }, {}].map((delta, i) => `data: ${JSON.stringify({ id: "chatcmpl_floor", object: "chat.completion.chunk", created: 0, model: "policy", choices: [{ index: 0, delta, finish_reason: i === 2 ? "stop" : null }] })}\n\n`).join("") + "data: [DONE]\n\n";
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/admin/sessions") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ apiKey: "floor" }));
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { stream?: boolean };
      if (body.stream) {
        res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
        res.end(events);
      } else {
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(chat) });
        res.end(chat);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 })}\n`);
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
}

async function serve(db: string): Promise<void> {
  // A long context: the long-session phase grows one conversation to ~150k tokens.
  const engine = createScriptedEngine(answer, { modelId: "policy", contextWindow: 1 << 20 });
  // "memory" isolates the proxy's cost from the durable store's (a comparison run, not the default).
  const store = db === "memory" ? openStore("memory") : new SqliteStore(db);
  const server = new ProxyServer({ engine, store, planner: createHistoryPlanner(store), adminToken: "bench-admin", onError: () => undefined });
  const urls = await server.listen(0, "127.0.0.1");
  process.stdout.write(`${JSON.stringify({ port: server.port, url: urls.openai })}\n`);
  // The parent asks for this process's CPU time around each phase ("cpu" lines on stdin).
  process.stdin.on("data", () => {
    const u = process.cpuUsage();
    process.stdout.write(`${JSON.stringify({ cpuMicros: u.user + u.system })}\n`);
  });
  process.on("SIGTERM", () => {
    void server.close().then(() => {
      store.close();
      process.exit(0);
    });
  });
}

// ---------------------------------------------------------------- client

class Client {
  private readonly agent: Agent;

  constructor(
    private readonly port: number,
    concurrency: number,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  }

  post(path: string, key: string, body: string): Promise<{ status: number; text: string }> {
    return new Promise((resolvePost, reject) => {
      const req = request(
        { host: "127.0.0.1", port: this.port, path, method: "POST", agent: this.agent, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolvePost({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }

  private readonly pool: string[] = [];

  private async issue(): Promise<string> {
    const r = await this.post("/admin/sessions", "bench-admin", "{}");
    return (JSON.parse(r.text) as { apiKey: string }).apiKey;
  }

  /** Issues sessions ahead of a measured phase, so that it measures model calls only. */
  async prepare(sessions: number): Promise<void> {
    for (let i = 0; i < sessions; i++) this.pool.push(await this.issue());
  }

  async session(): Promise<string> {
    return this.pool.pop() ?? this.issue();
  }

  close(): void {
    this.agent.destroy();
  }
}

/** One simulated harness: sessions of TURNS_PER_SESSION calls whose history extends token-exactly. */
class Harness {
  private key = "";
  private turn = TURNS_PER_SESSION;
  private sessionNo = 0;

  constructor(
    private readonly client: Client,
    private readonly stream: boolean,
    private readonly id: number,
  ) {}

  /** Prepares the next request (session issue is not timed); returns a function that makes the timed call. */
  async next(): Promise<() => Promise<void>> {
    if (this.turn >= TURNS_PER_SESSION) {
      this.key = await this.client.session();
      this.turn = 0;
      this.sessionNo++;
    }
    const messages = conversation(this.id * 100_000 + this.sessionNo, this.turn++).map((m) => ({ role: m.role, content: m.content }));
    const body = JSON.stringify({ model: "policy", messages, tools: TOOLS, stream: this.stream, max_tokens: 256 });
    return async () => {
      const r = await this.client.post("/v1/chat/completions", this.key, body);
      if (r.status !== 200 || !r.text.includes(this.stream ? "[DONE]" : ANSWER)) throw new InfraError("bench_check_failed", `bad response ${r.status}: ${r.text.slice(0, 300)}`);
    };
  }
}

/** A Claude-Code-sized conversation: ~10 kB system prompt, 16 tools (~33 kB of JSON), ~1.9 kB tool output per turn. */
const LONG_TOOLS = Array.from({ length: 16 }, (_, i) => ({
  type: "function",
  function: { name: i === 0 ? "bash" : `tool_${i}`, description: "Does one thing well and reports what it did. ".repeat(40), parameters: { type: "object", properties: { command: { type: "string", description: "What to run, exactly. ".repeat(16) } }, required: ["command"] } },
}));
const LONG_SYSTEM = "You are a coding agent working in a large repository. Follow the rules below. ".repeat(130);

function longConversation(session: number, turns: number): { role: string; content: string }[] {
  const messages = [{ role: "system", content: LONG_SYSTEM }, { role: "user", content: `Session ${session}: fix the failing parser tests.` }];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: "assistant", content: ANSWER }, { role: "user", content: `tool output ${t}:\n${"-rw-r--r-- 1 dev dev 4096 Dec  1 12:00 src/parser/module.ts\n".repeat(32)}` });
  }
  return messages;
}

/**
 * One session grown turn by turn to ~150k tokens, each request sent to the proxy and then to the floor server:
 * per-call latency at real-harness sizes (bodies of 50–200 kB that repeat the whole history and tool list).
 */
async function longSessionLatency(proxy: Client, floor: Client, turns: number): Promise<{ proxy: number[]; floor: number[]; promptChars: number[] }> {
  const key = await proxy.session();
  const out = { proxy: [] as number[], floor: [] as number[], promptChars: [] as number[] };
  for (let t = 0; t < turns; t++) {
    const body = JSON.stringify({ model: "policy", messages: longConversation(1, t), tools: LONG_TOOLS, max_tokens: 256 });
    for (const [client, times, k] of [[proxy, out.proxy, key], [floor, out.floor, "floor"]] as const) {
      const start = performance.now();
      const r = await client.post("/v1/chat/completions", k, body);
      times.push(performance.now() - start);
      if (r.status !== 200 || !r.text.includes(ANSWER)) throw new InfraError("bench_check_failed", `bad response ${r.status}: ${r.text.slice(0, 300)}`);
    }
    out.promptChars.push(body.length);
  }
  return out;
}

/**
 * Serial calls against several servers in alternating blocks of 25, so that the machine's slow drifts (other
 * processes, frequency) hit every server alike. The first `warmup` calls of each are not counted: a proxy serves
 * rollouts for hours, and its first ~1,000 calls run before the JIT, the heap and SQLite's page cache settle
 * (~25 % slower here).
 */
async function interleavedLatency(clients: Client[], stream: boolean, calls: number, warmup: number): Promise<{ measured: number[][]; warmup: number[][] }> {
  const block = 25;
  const harnesses = clients.map((c, i) => new Harness(c, stream, (stream ? 1 : 2) + 10 * i));
  const out = clients.map((): number[] => []);
  const early = clients.map((): number[] => []);
  for (let done = -Math.ceil(warmup / block) * block; done < calls; done += block) {
    for (const [i, h] of harnesses.entries()) {
      for (let k = 0; k < block; k++) {
        const call = await h.next();
        const t = performance.now();
        await call();
        (done >= 0 ? out : early)[i]?.push(performance.now() - t);
      }
    }
  }
  return { measured: out, warmup: early };
}

async function throughput(client: Client, stream: boolean, concurrency: number, seconds: number): Promise<{ perSecond: number; calls: number }> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      const h = new Harness(client, stream, 1000 + i + (stream ? 500 : 0));
      while (performance.now() < end) {
        const call = await h.next();
        await call();
        done++;
      }
    }),
  );
  return { perSecond: done / seconds, calls: done };
}

async function directLatency(engine: SamplingEngine, calls: number): Promise<number[]> {
  const out: number[] = [];
  const params = { ...DEFAULT_SAMPLING, maxTokens: 256 };
  for (let i = 0; i < calls + 20; i++) {
    const messages = conversation(7, i % TURNS_PER_SESSION);
    const promptTokens = engine.tokenizer.encode(engine.renderer.render(messages, TOOL_SPECS, { addGenerationPrompt: true }));
    const context = { sessionId: "direct", callId: `c${i}`, messages, tools: TOOL_SPECS };
    const t = performance.now();
    const r = await engine.generate({ promptTokens, params, context });
    if (i >= 20) out.push(performance.now() - t);
    if (r.finishReason !== "stop") throw new InfraError("bench_check_failed", "direct generation did not finish");
  }
  return out;
}

interface Child {
  port: number;
  /** CPU time (user + system, µs) the proxy process has used so far. */
  cpu: () => Promise<number>;
  stop: () => Promise<void>;
}

async function startChild(db: string, profileDir: string | undefined): Promise<Child> {
  const self = fileURLToPath(import.meta.url);
  const profile = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  const child = spawn(process.execPath, [...profile, self, "--serve", db], { stdio: ["pipe", "pipe", "inherit"] });
  const waiting: ((line: string) => void)[] = [];
  let buf = "";
  child.stdout.on("data", (d: Buffer) => {
    buf += d.toString();
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      waiting.shift()?.(line);
    }
  });
  const nextLine = (): Promise<string> => new Promise((r) => waiting.push(r));
  const port = await new Promise<number>((resolvePort, reject) => {
    void nextLine().then((line) => resolvePort((JSON.parse(line) as { port: number }).port));
    child.once("exit", (code) => reject(new InfraError("bench_check_failed", `bench proxy exited with ${String(code)}`)));
  });
  return {
    port,
    cpu: async () => {
      const line = nextLine();
      child.stdin.write("cpu\n");
      return (JSON.parse(await line) as { cpuMicros: number }).cpuMicros;
    },
    stop: () =>
      new Promise<void>((r) => {
        child.once("exit", () => r());
        killChild(child, "SIGTERM");
      }),
  };
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

function markdown(result: Record<string, unknown>): string {
  const r = result as {
    date: string;
    cpus: number;
    cpuModel: string;
    loadavg: number[];
    promptTokens: { min: number; max: number };
    schema: number;
    warmupCalls: number;
    modes: Record<
      string,
      {
        direct: { p50: number; p99: number };
        proxy: { p50: number; p99: number };
        httpFloor: { p50: number };
        addedP50: number;
        addedP99: number;
        ownP50: number;
        proxyWarmupP50: number | null;
        callsPerSecond: number;
        proxyCpuMsPerCall: number;
        callsPerCpuSecond: number;
      }
    >;
    concurrency: number;
    longSession: { turns: number; bodyKb: { first: number; last: number }; promptTokens: { first: number; last: number }; lastTurns: number; proxyP50: number; floorP50: number; ownP50: number };
  };
  const l = r.longSession;
  const rows = Object.entries(r.modes).map(
    ([mode, m]) =>
      `| ${mode} | ${m.direct.p50.toFixed(3)} | ${m.proxy.p50.toFixed(3)} | **${m.addedP50.toFixed(3)}** | ${m.httpFloor.p50.toFixed(3)} | ${m.ownP50.toFixed(3)} | ${m.proxy.p99.toFixed(3)} | ${m.addedP99.toFixed(3)} | **${m.callsPerSecond}** | ${m.proxyCpuMsPerCall.toFixed(3)} | ${m.callsPerCpuSecond} |`,
  );
  return [
    `Run ${r.date} on ${r.cpus} cores (${r.cpuModel}), load average ${r.loadavg.map((x) => x.toFixed(1)).join(" ")}; prompts ${r.promptTokens.min}–${r.promptTokens.max} tokens,`,
    `multi-turn sessions extending token-exactly, SQLite records (schema ${r.schema}: prompts and texts as deltas), OpenAI Chat Completions, ${r.concurrency} concurrent clients for calls/s.`,
    `Latencies in ms (serial calls, after ${r.warmupCalls} uncounted warm-up calls per server; a freshly started proxy's first calls: p50 ${Object.values(r.modes)[0]?.proxyWarmupP50?.toFixed(3) ?? "?"}`,
    "non-stream); added = proxy − direct engine call; HTTP floor = a bare node:http server in a child",
    "process answering the same requests (measured interleaved with the proxy), own = proxy − floor. calls/s = measured",
    "with the concurrent clients on the same machine; CPU ms/call = the proxy process's own CPU time per call in that",
    "run (sessions issued beforehand), and calls per CPU-second = what one fully available core sustains at that cost.",
    "",
    "| mode | direct p50 | proxy p50 | added p50 | HTTP floor p50 | own p50 | proxy p99 | added p99 | calls/s | proxy CPU ms/call | calls per CPU-second |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...rows,
    "",
    `Long session (real-harness sizes): one conversation grown over ${l.turns} turns from ${l.promptTokens.first} to ${l.promptTokens.last} prompt tokens`,
    `(request bodies ${l.bodyKb.first}–${l.bodyKb.last} kB: the whole history and a 16-tool list every call), non-stream. Over the last ${l.lastTurns} turns:`,
    `proxy p50 **${l.proxyP50.toFixed(2)} ms**, HTTP floor p50 ${l.floorP50.toFixed(2)} ms, own p50 **${l.ownP50.toFixed(2)} ms**.`,
  ].join("\n");
}

async function main(): Promise<void> {
  registerBuiltins();
  const { values } = parseArgs({
    options: {
      serve: { type: "string" },
      calls: { type: "string", default: "1000" },
      warmup: { type: "string", default: "1000" },
      seconds: { type: "string", default: "4" },
      concurrency: { type: "string", default: "16" },
      out: { type: "string" },
      "no-docs": { type: "boolean" },
      profile: { type: "string" },
      store: { type: "string", default: "sqlite" },
    },
  });
  if (values.serve === "floor") return serveFloor();
  if (values.serve) return serve(values.serve);
  const calls = Number(values.calls);
  const warmup = Number(values.warmup);
  const seconds = Number(values.seconds);
  const concurrency = Number(values.concurrency);
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
  const out = resolve(values.out ?? join(root, "docs", "bench", "proxy.json"));

  const engine = createScriptedEngine(answer, { modelId: "policy" });
  const lengths = [0, TURNS_PER_SESSION - 1].map((k) => engine.tokenizer.encode(engine.renderer.render(conversation(1, k), TOOL_SPECS, { addGenerationPrompt: true })).length);
  const dir = mkdtempSync(join(tmpdir(), "hrl-bench-proxy-"));
  if (values.store !== "sqlite" && values.store !== "memory") throw new UserError("invalid_arguments", `--store must be sqlite or memory, got ${values.store}`);
  const child = await startChild(values.store === "memory" ? "memory" : join(dir, "calls.sqlite"), values.profile);
  const floorChild = await startChild("floor", undefined);
  const client = new Client(child.port, concurrency);
  const floorClient = new Client(floorChild.port, 1);
  const modes: Record<string, unknown> = {};
  let longSession: Record<string, unknown> | undefined;
  const lengthOf = (messages: { role: string; content: string }[]): number =>
    engine.tokenizer.encode(engine.renderer.render(messages as ChatMessage[], LONG_TOOLS.map((t) => ({ name: t.function.name, description: t.function.description, parameters: t.function.parameters })), { addGenerationPrompt: true })).length;
  try {
    for (const stream of [false, true]) {
      const mode = stream ? "stream" : "non-stream";
      console.error(`${mode}: direct engine, ${calls} calls…`);
      const direct = summary(await directLatency(engine, calls));
      console.error(`${mode}: through the proxy and the bare HTTP floor, ${calls} serial calls each, interleaved…`);
      await client.prepare(Math.ceil((calls + warmup + 50) / TURNS_PER_SESSION) + 1);
      const serial = await interleavedLatency([client, floorClient], stream, calls, warmup);
      const [proxyTimes = [], floorTimes = []] = serial.measured;
      const [proxyWarmup = []] = serial.warmup;
      const proxy = summary(proxyTimes);
      const floor = summary(floorTimes);
      console.error(`${mode}: throughput, ${concurrency} clients for ${seconds}s…`);
      // Enough sessions for ~1,500 calls/s; more are issued on demand (and then counted).
      await client.prepare(Math.ceil((seconds * 1500) / TURNS_PER_SESSION));
      const cpuBefore = await child.cpu();
      const tp = await throughput(client, stream, concurrency, seconds);
      const cpuMicros = (await child.cpu()) - cpuBefore;
      const callsPerSecond = tp.perSecond;
      modes[mode] = {
        direct: { p50: round(direct.p50), p99: round(direct.p99), mean: round(direct.mean), n: direct.n },
        proxy: { p50: round(proxy.p50), p99: round(proxy.p99), mean: round(proxy.mean), n: proxy.n },
        addedP50: round(proxy.p50 - direct.p50),
        addedP99: round(proxy.p99 - direct.p99),
        // A bare Node HTTP server in a child process: the part of "added" that is the HTTP hop itself.
        httpFloor: { p50: round(floor.p50), p99: round(floor.p99), mean: round(floor.mean), n: floor.n },
        ownP50: round(proxy.p50 - floor.p50),
        // The uncounted first calls (a freshly started proxy: JIT, heap and SQLite cache still warming up).
        proxyWarmupP50: proxyWarmup.length > 0 ? round(summary(proxyWarmup).p50) : null,
        callsPerSecond: Math.round(callsPerSecond),
        // The proxy's own CPU per call under load (the session-issuing admin call every few calls included); a
        // throughput measure that does not depend on how busy the rest of the machine is.
        proxyCpuMsPerCall: round(cpuMicros / 1000 / tp.calls),
        callsPerCpuSecond: Math.round(tp.calls / (cpuMicros / 1e6)),
      };
    }
    console.error(`long session: ${LONG_TURNS} turns growing to ~150k tokens, proxy and floor alternately…`);
    const long = await longSessionLatency(client, floorClient, LONG_TURNS);
    const last = (xs: number[]): number[] => xs.slice(-LONG_TAIL);
    longSession = {
      turns: LONG_TURNS,
      bodyKb: { first: Math.round((long.promptChars[0] ?? 0) / 1024), last: Math.round((long.promptChars.at(-1) ?? 0) / 1024) },
      promptTokens: { first: lengthOf(longConversation(1, 0)), last: lengthOf(longConversation(1, LONG_TURNS - 1)) },
      lastTurns: LONG_TAIL,
      proxyP50: round(summary(last(long.proxy)).p50),
      floorP50: round(summary(last(long.floor)).p50),
      ownP50: round(summary(last(long.proxy)).p50 - summary(last(long.floor)).p50),
    };
  } finally {
    client.close();
    floorClient.close();
    await floorChild.stop();
    await child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const result = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? "unknown",
    loadavg: loadavg(),
    promptTokens: { min: Math.min(...lengths), max: Math.max(...lengths) },
    turnsPerSession: TURNS_PER_SESSION,
    completionTokens: engine.tokenizer.encode(`${ANSWER}<|im_end|>`).length,
    concurrency,
    store: values.store,
    schema: LATEST_SCHEMA_VERSION,
    serialCalls: calls,
    warmupCalls: warmup,
    throughputSeconds: seconds,
    modes,
    longSession,
  };
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  const table = markdown(result);
  console.log(table);
  const doc = join(root, "docs", "proxy.md");
  if (!values["no-docs"] && existsSync(doc)) {
    const text = readFileSync(doc, "utf8");
    const start = "<!-- bench:proxy:start -->";
    const end = "<!-- bench:proxy:end -->";
    const a = text.indexOf(start);
    const b = text.indexOf(end);
    if (a >= 0 && b > a) writeFileSync(doc, `${text.slice(0, a + start.length)}\n${table}\n${text.slice(b)}`);
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exitCode = 1;
});
