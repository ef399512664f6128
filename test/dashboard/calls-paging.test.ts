import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDashboard, type Dashboard } from "../../src/dashboard/server.js";
import type { CallSummaryPage } from "../../src/store/call-summaries.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import { makeRecord, makeSession } from "../store/records.js";
import { getJson } from "./http.js";

const CALLS = 4000;
const ROLLOUTS_PER_STEP = 40;
const HARNESSES = ["codex", "claude-code", "openclaw", "pi"];
const root = mkdtempSync(join(tmpdir(), "harnessrl-dash-calls-"));
let dash: Dashboard;

/** A store of CALLS calls: 10 steps × 40 rollouts × 10 calls, harness by rollout, every 97th call failed. */
beforeAll(async () => {
  const store = new SqliteStore(join(root, "big", "records.sqlite"));
  let n = 0;
  for (let step = 1; step <= 10; step++) {
    for (let r = 0; r < ROLLOUTS_PER_STEP; r++) {
      const rolloutId = `s${step}-x-task${r}-${HARNESSES[r % 4]}-0`;
      const session = makeSession({ rolloutId, harness: HARNESSES[r % 4] as string });
      store.createSession(session, `c-${rolloutId}`);
      for (let c = 0; c < 10; c++, n++) store.insertCall(makeRecord({ callId: `call-${n}`, sessionId: session.sessionId, rolloutId, harness: HARNESSES[r % 4] as string, status: n % 97 === 0 ? "error" : "ok" }, 16));
    }
  }
  store.close();
  dash = await startDashboard({ runs: root, port: 0 });
}, 120_000);

afterAll(async () => {
  await dash?.close();
  rmSync(root, { recursive: true, force: true });
});

const calls = (q: string): Promise<CallSummaryPage> => getJson<CallSummaryPage>(dash.port, `/api/runs/big/calls?${q}`);

describe(`calls table over a ${CALLS}-call store, paged on the server`, () => {
  it("walks every call exactly once, newest first, by sequence number (and back)", async () => {
    const seen: number[] = [];
    let q = "limit=1000";
    for (let i = 0; i < 20; i++) {
      const p = await calls(q);
      expect(p.total).toBe(CALLS);
      seen.push(...p.rows.map((r) => r.seq));
      if (!p.more) break;
      q = `limit=1000&before=${p.rows[p.rows.length - 1]?.seq}`;
    }
    expect(seen).toHaveLength(CALLS);
    expect(seen).toEqual([...seen].sort((a, b) => b - a));
    const back = await calls(`limit=50&after=${seen[120]}`);
    expect(back.rows.map((r) => r.seq)).toEqual(seen.slice(70, 120));
    expect(back.more).toBe(true);
  });

  it("filters by step through the rollout index, with an exact total", async () => {
    const p = await calls("step=3&limit=20");
    expect(p.total).toBe(CALLS / 10);
    expect(p.rows.every((r) => r.rolloutId?.startsWith("s3-"))).toBe(true);
    // s1- must not match s10-: the range is the prefix itself.
    expect((await calls("step=1&limit=1")).total).toBe(CALLS / 10);
    const both = await calls("step=3&harness=pi&limit=1000");
    expect(both.total).toBe(CALLS / 40);
    expect(both.rows.every((r) => r.harness === "pi")).toBe(true);
  });

  it("filters by harness and status without counting the whole table", async () => {
    const failed = await calls("status=error&limit=1000");
    expect(failed.total).toBeNull();
    expect(failed.rows).toHaveLength(Math.ceil(CALLS / 97));
    expect(failed.rows.every((r) => r.status === "error")).toBe(true);
    const codex = await calls("harness=codex&limit=100");
    expect(codex.rows).toHaveLength(100);
    expect(codex.more).toBe(true);
    expect(codex.rows.every((r) => r.harness === "codex")).toBe(true);
  });
});
