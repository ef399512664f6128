import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { MemoryStore } from "../store/memory.js";
import { ICR_SCHEMA_VERSION, type CallRecord } from "../icr/records.js";
import { SqliteStore } from "../store/sqlite.js";
import type { Store } from "../store/types.js";

export interface InsertBenchResult {
  store: string;
  promptTokens: number;
  records: number;
  p50Us: number;
  p99Us: number;
  meanUs: number;
  insertsPerSecond: number;
}

/** A record the size the proxy writes for a ~4k-token prompt: raw request JSON included (~16 kB of text). */
export function benchRecord(i: number, promptTokens: number): CallRecord {
  const text = "x".repeat(promptTokens * 4);
  const completion = Array.from({ length: 64 }, (_, j) => (i + j) % 265);
  return {
    schemaVersion: ICR_SCHEMA_VERSION, callId: `call_bench_${i}`, sessionId: `ses_${i % 16}`, rolloutId: "rol_bench", harness: "bench",
    agentRole: "main", agentId: null, protocol: "openai-chat", stream: true, status: "ok", error: null,
    rawRequest: { model: "tiny", messages: [{ role: "user", content: text }] }, rawResponse: { id: `r${i}`, choices: [{ message: { content: "ok" } }] },
    messages: [{ role: "user", content: text }], tools: [], response: { role: "assistant", content: "ok" },
    promptTokens: Array.from({ length: promptTokens }, (_, j) => (i * 7 + j) % 265), completionTokens: completion,
    logprobs: completion.map((_, j) => -j / 100), spans: { toolCalls: [], malformed: 0 }, policyVersion: 1, samplingRequested: {}, samplingUsed: { temperature: 1, maxTokens: 64, topP: 1, topK: 0, minP: 0 },
    finishReason: "stop", timings: { receivedAt: i, engineStartAt: i, firstTokenAt: i, engineEndAt: i, recordedAt: i },
    parentCallId: null, reusedPrefixTokens: 0, break: null, spawnedByCallId: null,
  };
}

/** Times `insertCall` (durable commit included) for records with `promptTokens` prompt tokens. */
export function benchInsert(store: Store, records: number, promptTokens: number): InsertBenchResult {
  const prepared = Array.from({ length: records }, (_, i) => benchRecord(i, promptTokens));
  for (let i = 0; i < Math.min(50, records); i++) store.insertCall({ ...benchRecord(i, promptTokens), callId: `warm_${i}` });
  const times: number[] = [];
  const start = performance.now();
  for (const r of prepared) {
    const t0 = performance.now();
    store.insertCall(r);
    times.push(performance.now() - t0);
  }
  const total = performance.now() - start;
  times.sort((a, b) => a - b);
  const q = (p: number): number => Math.round((times[Math.min(times.length - 1, Math.floor(p * times.length))] as number) * 1000);
  return {
    store: store.kind, promptTokens, records, p50Us: q(0.5), p99Us: q(0.99),
    meanUs: Math.round((total / records) * 1000), insertsPerSecond: Math.round(records / (total / 1000)),
  };
}

/** Both adapters, fresh files, `records` inserts each. */
export function runStoreBench(records = 2000, promptTokens = 4096): InsertBenchResult[] {
  const dir = mkdtempSync(join(tmpdir(), "hrl-store-bench-"));
  try {
    const sqlite = new SqliteStore(join(dir, "bench.sqlite"));
    const memory = new MemoryStore();
    const out = [benchInsert(sqlite, records, promptTokens), benchInsert(memory, records, promptTokens)];
    sqlite.close();
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
