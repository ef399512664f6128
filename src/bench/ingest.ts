/**
 * `npm run bench:ingest`: what landing a finished rollout in the central store costs, per bundle, on SQLite and on
 * Postgres (a local server started by scripts/local-postgres.mjs, whose URL arrives in HARNESSRL_BENCH_PG_URL), plus
 * the Postgres store's synchronous insertCall and a full read back. Writes docs/bench/ingest.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { InfraError } from "../core/errors.js";
import type { CallRecord, SessionInfo } from "../icr/records.js";
import { PostgresStore } from "../store/postgres.js";
import { SqliteStore } from "../store/sqlite.js";
import type { RolloutBundle, RolloutIngest, Store } from "../store/types.js";
import { benchRecord } from "./store.js";

interface IngestResult {
  store: string;
  bundles: number;
  callsPerBundle: number;
  promptTokens: number;
  ingestP50Ms: number;
  ingestP90Ms: number;
  duplicateP50Ms: number;
  insertCallP50Us: number;
  readAllCallsMs: number;
}

/** A rollout of `calls` turns of one session, each extending the previous (as a real agent loop does). */
function bundle(n: number, calls: number, promptTokens: number): RolloutBundle {
  const rolloutId = `rol_b${n}`;
  const session: SessionInfo = { sessionId: `ses_b${n}`, rolloutId, harness: "bench", agentRole: "main", parentSessionId: null, spawnedByCallId: null, createdAt: n, metadata: {} };
  const out: CallRecord[] = [];
  for (let i = 0; i < calls; i++) {
    const r = benchRecord(n * 1000 + i, i === 0 ? promptTokens : 0);
    const parent = out[i - 1];
    const prompt = parent ? [...parent.promptTokens, ...parent.completionTokens, 11, 12, 13] : r.promptTokens;
    out.push({ ...r, callId: `call_b${n}_${i}`, sessionId: session.sessionId, rolloutId, promptTokens: prompt, parentCallId: parent?.callId ?? null, reusedPrefixTokens: parent ? prompt.length - 3 : 0 });
  }
  return { bundleVersion: 1, rolloutId, attempt: 1, nodeId: "node-bench", sessions: [session], calls: out, result: { reward: 1 } };
}

const quantile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
};
const round = (x: number, digits = 2): number => Number(x.toFixed(digits));

function measure(store: Store & RolloutIngest, bundles: number, calls: number, promptTokens: number): IngestResult {
  const made = Array.from({ length: bundles }, (_, i) => bundle(i, calls, promptTokens));
  const ingest: number[] = [];
  for (const b of made) {
    const t0 = performance.now();
    store.ingestRollout(b);
    ingest.push(performance.now() - t0);
  }
  const dup: number[] = [];
  for (const b of made.slice(0, 20)) {
    const t0 = performance.now();
    store.ingestRollout(b);
    dup.push(performance.now() - t0);
  }
  const inserts: number[] = [];
  for (let i = 0; i < 200; i++) {
    const r = { ...benchRecord(900_000 + i, promptTokens), callId: `call_direct_${i}` };
    const t0 = performance.now();
    store.insertCall(r);
    inserts.push(performance.now() - t0);
  }
  const t0 = performance.now();
  const all = store.listCalls();
  const readAll = performance.now() - t0;
  if (all.length !== bundles * calls + 200) throw new InfraError("bench_check_failed", `read ${all.length} calls back, wrote ${bundles * calls + 200}`);
  return {
    store: store.kind, bundles, callsPerBundle: calls, promptTokens,
    ingestP50Ms: round(quantile(ingest, 0.5)), ingestP90Ms: round(quantile(ingest, 0.9)), duplicateP50Ms: round(quantile(dup, 0.5)),
    insertCallP50Us: Math.round(quantile(inserts, 0.5) * 1000), readAllCallsMs: Math.round(readAll),
  };
}

function main(): void {
  const bundles = Number(process.env.HARNESSRL_BENCH_BUNDLES ?? 100);
  const calls = 20;
  const promptTokens = 2048;
  const dir = mkdtempSync(join(tmpdir(), "hrl-ingest-bench-"));
  const results: IngestResult[] = [];
  try {
    const sqlite = new SqliteStore(join(dir, "central.sqlite"));
    results.push(measure(sqlite, bundles, calls, promptTokens));
    sqlite.close();
    const url = process.env.HARNESSRL_BENCH_PG_URL;
    if (url) {
      const pg = new PostgresStore(`${url}${url.includes("?") ? "&" : "?"}schema=bench_${process.pid}`);
      results.push(measure(pg, bundles, calls, promptTokens));
      pg.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const out = resolve(process.env.HARNESSRL_BENCH_OUT ?? "docs/bench/ingest.json");
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ when: new Date().toISOString(), machine: process.env.HARNESSRL_BENCH_NOTE ?? "shared 2-core dev machine", results }, null, 2) + "\n");
  for (const r of results) console.log(JSON.stringify(r));
}

main();
