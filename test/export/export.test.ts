import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import type { DuckDBConnection } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallRecord } from "../../src/icr/records.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import { compactionSession, retrySession, subAgentRollout } from "../trees/fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "hrl-export-"));
const dbPath = join(dir, "calls.sqlite");
const out = join(dir, "out");
const records: CallRecord[] = [
  ...subAgentRollout(),
  ...compactionSession().map((r) => ({ ...r, sessionId: "ses_c", rolloutId: "rol_c" })),
  ...retrySession().map((r) => ({ ...r, sessionId: "ses_r", rolloutId: "rol_r", engineInstance: "llamacpp@node-b/7/00ff00ff" })),
];
let db: DuckDBConnection;

function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(process.cwd(), "dist", "cli", "main.js"), ...args], { encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function rows(sql: string): Promise<Record<string, unknown>[]> {
  const reader = await db.runAndReadAll(sql);
  return reader.getRowObjectsJson() as Record<string, unknown>[];
}

beforeAll(async () => {
  const store = new SqliteStore(dbPath);
  const sessions = new Map<string, CallRecord>();
  for (const r of records) if (!sessions.has(r.sessionId)) sessions.set(r.sessionId, r);
  for (const [id, r] of sessions) {
    store.createSession({ sessionId: id, rolloutId: r.rolloutId, harness: "fixture", agentRole: r.agentRole, parentSessionId: r.spawnedByCallId ? "ses_main" : null, spawnedByCallId: r.spawnedByCallId, createdAt: 1, metadata: { note: "é" } }, `cred-${id}`);
  }
  for (const r of records) store.insertCall(r);
  store.close();
  const instance = await DuckDBInstance.create(":memory:");
  db = await instance.connect();
});

afterAll(() => {
  db?.closeSync();
  rmSync(dir, { recursive: true, force: true });
});

describe("harnessrl export → Parquet read back by duckdb", () => {
  it("writes the four tables and a manifest through the CLI", () => {
    const r = cli("export", "--db", dbPath, "--out", out, "--json");
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8")) as { version: number; files: { table: string; rows: number }[] };
    expect(JSON.parse(r.stdout)).toEqual(manifest);
    expect(manifest.version).toBe(1);
    expect(manifest.files.map((f) => [f.table, f.rows > 0])).toEqual([
      ["calls", true],
      ["sessions", true],
      ["tree_nodes", true],
      ["tree_calls", true],
    ]);
    expect(manifest.files[0]?.rows).toBe(records.length);
  });

  it("round-trips token ids, logprobs and record fields through duckdb", async () => {
    const got = await rows(`SELECT call_id, session_id, rollout_id, prompt_tokens, completion_tokens, logprobs, break_kind, spawned_by_call_id, policy_version, engine_instance, finish_reason, typeof(prompt_tokens) AS t FROM '${join(out, "calls.parquet")}' ORDER BY call_id`);
    expect(got).toHaveLength(records.length);
    const byId = new Map(records.map((r) => [r.callId, r]));
    for (const g of got) {
      const r = byId.get(g.call_id as string) as CallRecord;
      expect(g.t).toBe("INTEGER[]");
      expect(g.prompt_tokens).toEqual(r.promptTokens);
      expect(g.completion_tokens).toEqual(r.completionTokens);
      expect((g.logprobs as number[]).map((x) => Math.fround(x))).toEqual(r.logprobs.map((x) => Math.fround(x)));
      expect([g.session_id, g.rollout_id, g.break_kind, g.spawned_by_call_id, g.policy_version, g.engine_instance, g.finish_reason]).toEqual([r.sessionId, r.rolloutId, r.break?.kind ?? null, r.spawnedByCallId, r.policyVersion, r.engineInstance ?? null, r.finishReason]);
    }
    const meta = await rows(`SELECT key::VARCHAR AS k, value::VARCHAR AS v FROM parquet_kv_metadata('${join(out, "calls.parquet")}') ORDER BY k`);
    expect(meta).toEqual([
      { k: "harnessrl.export_version", v: "1" },
      { k: "harnessrl.table", v: "calls" },
    ]);
  });

  it("tree_nodes rebuild every call's prompt + completion by following parent_node_id from tree_calls.end_node", async () => {
    const nodes = await rows(`SELECT session_id, node_id, parent_node_id, tokens, role, logprobs, call_id, sample_offset FROM '${join(out, "tree_nodes.parquet")}'`);
    const calls = await rows(`SELECT session_id, call_id, end_node, label, segment_label, segment_lineage, tree_parent_call_id FROM '${join(out, "tree_calls.parquet")}'`);
    const key = (s: unknown, n: unknown): string => `${String(s)}#${String(n)}`;
    const byKey = new Map(nodes.map((n) => [key(n.session_id, n.node_id), n]));
    const byId = new Map(records.map((r) => [r.callId, r]));
    for (const c of calls) {
      const chain: number[][] = [];
      for (let n = c.end_node as number; n > 0; ) {
        const node = byKey.get(key(c.session_id, n));
        if (!node) throw new Error(`missing node ${n}`);
        chain.push(node.tokens as number[]);
        n = node.parent_node_id as number;
      }
      const r = byId.get(c.call_id as string) as CallRecord;
      expect(chain.reverse().flat()).toEqual([...r.promptTokens, ...r.completionTokens]);
    }
    // Sampled nodes carry their owner's logprobs.
    for (const n of nodes.filter((x) => x.role === "sampled")) {
      const owner = byId.get(n.call_id as string) as CallRecord;
      const off = n.sample_offset as number;
      expect((n.logprobs as number[]).map(Math.fround)).toEqual(owner.logprobs.slice(off, off + (n.tokens as number[]).length).map(Math.fround));
    }
    const labels = Object.fromEntries(calls.map((c) => [c.call_id as string, c.label]));
    expect(labels).toMatchObject({ s1: "sub-agent", k4: "compaction", r2b: "retry", m2: "main" });
    // A compaction of the agent's own conversation is still the agent's: its lineage says so, its label how it began.
    const lineages = Object.fromEntries(calls.map((c) => [c.call_id as string, c.segment_lineage]));
    expect(lineages).toMatchObject({ s1: "sub-agent", k4: "main", r2b: "main", m2: "main" });
  });

  it("reads the sessions table, list<string> columns and JSON columns", async () => {
    const s = await rows(`SELECT session_id, parent_session_id, metadata_json FROM '${join(out, "sessions.parquet")}' ORDER BY session_id`);
    expect(s.map((x) => x.session_id)).toEqual(["ses_c", "ses_main", "ses_r", "ses_sub"]);
    expect(s.find((x) => x.session_id === "ses_sub")?.parent_session_id).toBe("ses_main");
    const ends = await rows(`SELECT ends_call_ids FROM '${join(out, "tree_nodes.parquet")}' WHERE len(ends_call_ids) > 0`);
    expect(ends.flatMap((e) => e.ends_call_ids as string[]).sort()).toEqual(records.map((r) => r.callId).sort());
  });

  it("fails with a user error on a missing store", () => {
    const r = cli("export", "--db", join(dir, "nope.sqlite"), "--out", out);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("no call record store");
  });
});
