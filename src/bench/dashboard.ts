/**
 * Dashboard benchmark: a synthetic run with 100k calls in its real SQLite store (10k rollouts of 10 calls, each
 * extending the previous one, as the proxy records them), 10k rollouts.jsonl lines and 2k metrics lines; the
 * dashboard server started on it; the latency of the first (cold) and later (warm) answer of every request a page
 * makes. Writes docs/bench/dashboard.json (`--out FILE`, `--calls N`).
 */
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { startDashboard } from "../dashboard/server.js";
import { SqliteStore } from "../store/sqlite.js";
import { benchRecord } from "./store.js";
import { latencySummary } from "./stats.js";

const HARNESSES = ["codex", "claude-code", "openclaw", "qwen-code", "pi", "chat-agent", "claw-agent", "resp-agent"];
const FAMILIES = ["arith", "files", "lookup", "edit"];

function get(port: number, path: string): Promise<{ status: number; bytes: number }> {
  return new Promise((done, fail) => {
    const req = request({ host: "127.0.0.1", port, path }, (res) => {
      let bytes = 0;
      res.on("data", (c: Buffer) => (bytes += c.length));
      res.on("end", () => done({ status: res.statusCode ?? 0, bytes }));
    });
    req.on("error", fail);
    req.end();
  });
}

function build(dir: string, calls: number): { rollouts: number; insertSeconds: number } {
  const perRollout = 10;
  const rollouts = Math.ceil(calls / perRollout);
  const store = new SqliteStore(join(dir, "records.sqlite"));
  const t0 = performance.now();
  const lines: string[] = [];
  for (let r = 0; r < rollouts; r++) {
    const step = 1 + Math.floor(r / 100);
    // GRPO groups of 4 samples (task × harness within a step).
    const harness = HARNESSES[Math.floor(r / 4) % HARNESSES.length] as string;
    const task = `task-${Math.floor(r / 32) % 50}`;
    const rolloutId = `s${step}-bench-${task}-${harness}-${r % 4}`;
    const sessionId = `ses_${r}`;
    store.createSession({ sessionId, rolloutId, harness, agentRole: "main", parentSessionId: null, spawnedByCallId: null, createdAt: r, metadata: {} }, `cred_${r}`);
    let parent: string | null = null;
    for (let c = 0; c < perRollout && r * perRollout + c < calls; c++) {
      const base = benchRecord(r * perRollout + c, 256 + 64 * c);
      const callId = `call_${r}_${c}`;
      store.insertCall({ ...base, callId, sessionId, rolloutId, harness, parentCallId: parent, status: c === 7 && r % 13 === 0 ? "error" : "ok" });
      parent = callId;
    }
    const score = ((r * 2654435761) % 1000) / 1000;
    lines.push(JSON.stringify({ rolloutId, taskId: task, harness, sample: r % 4, family: FAMILIES[r % FAMILIES.length], split: "train", status: score > 0.5 ? "ok" : "task_failed", score, verifier: { score, subscores: {} }, harnessDetail: "exited 0", exitCode: 0, signal: null, stdout: "x".repeat(500), stderr: "", error: null, sessionIds: [sessionId], calls: perRollout, timings: { startedAt: 0, sandboxReadyAt: 1, harnessEndedAt: 2, settledAt: 3, verifiedAt: 4, endedAt: 5000 } }));
  }
  store.close();
  writeFileSync(join(dir, "rollouts.jsonl"), `${lines.join("\n")}\n`);
  const metrics: string[] = [];
  for (let s = 1; s <= 2000; s++) {
    const row: Record<string, number | string> = { phase: "rl", step: s, policy_version: s + 1, time: s, "reward/mean": Math.sin(s / 50), "kl/ref": s / 1e5, entropy: 1 - s / 4000, grad_norm: 1, clip_fraction: 0.03, "mismatch/mean_abs": 0.01 };
    for (const h of HARNESSES) {
      row[`pass1/${h}`] = 0.5;
      row[`bandit/prob/${h}`] = 1 / HARNESSES.length;
    }
    metrics.push(JSON.stringify(row));
  }
  appendFileSync(join(dir, "metrics.jsonl"), `${metrics.join("\n")}\n`);
  return { rollouts, insertSeconds: (performance.now() - t0) / 1000 };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: "string" }, calls: { type: "string" } } });
  const calls = Number(values.calls ?? 100_000);
  const root = mkdtempSync(join(tmpdir(), "hrl-dash-bench-"));
  const dir = join(root, "big");
  mkdirSync(dir);
  try {
    const built = build(dir, calls);
    console.log(`built ${calls} calls, ${built.rollouts} rollouts in ${built.insertSeconds.toFixed(1)} s`);
    const dash = await startDashboard({ runs: root, port: 0 });
    const r = 4900;
    const rid = encodeURIComponent(`s${1 + Math.floor(r / 100)}-bench-task-${Math.floor(r / 32) % 50}-${HARNESSES[Math.floor(r / 4) % 8]}-0`);
    const paths: [string, string][] = [
      ["runs list", "/api/runs"],
      ["run page (charts of 2k steps)", "/api/runs/big"],
      ["rollouts, first page", "/api/runs/big/rollouts?limit=50"],
      ["rollouts, filtered + sorted by reward", "/api/runs/big/rollouts?harness=codex&status=ok&sort=-reward&limit=50"],
      ["calls, first page", "/api/runs/big/calls?limit=50"],
      ["calls, filtered by harness + step", "/api/runs/big/calls?harness=codex&step=40&limit=50"],
      ["calls, filtered by harness (not counted)", "/api/runs/big/calls?harness=pi&limit=50"],
      ["calls, page 1000 deep (by seq)", "/api/runs/big/calls?before=50000&limit=50"],
      ["calls, page 1000 deep (by offset)", "/api/runs/big/calls?offset=50000&limit=50"],
      ["one rollout (transcripts, tokens, group tree)", `/api/runs/big/rollouts/${rid}`],
      ["client page + assets", "/"],
    ];
    const results = [];
    for (const [name, path] of paths) {
      const t0 = performance.now();
      const first = await get(dash.port, path);
      const coldMs = performance.now() - t0;
      const warm: number[] = [];
      for (let i = 0; i < 10; i++) {
        const t = performance.now();
        await get(dash.port, path);
        warm.push(performance.now() - t);
      }
      const s = latencySummary(warm);
      results.push({ name, path, status: first.status, bytes: first.bytes, coldMs: Math.round(coldMs * 10) / 10, warmP50Ms: Math.round(s.p50 * 10) / 10, warmP99Ms: Math.round(s.p99 * 10) / 10 });
      console.log(`${name.padEnd(48)} ${String(first.status)} cold ${coldMs.toFixed(1)} ms, warm p50 ${s.p50.toFixed(1)} ms (${first.bytes} bytes)`);
    }
    await dash.close();
    const out = resolve(values.out ?? "docs/bench/dashboard.json");
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify({ calls, rollouts: built.rollouts, metricsLines: 2000, insertSeconds: Math.round(built.insertSeconds), results, target: { firstAnswerMs: 1000 } }, null, 2)}\n`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
