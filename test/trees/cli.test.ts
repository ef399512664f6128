import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallRecord } from "../../src/icr/records.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import type { ForestView } from "../../src/trees/view.js";
import { compactionSession, retrySession, subAgentRollout } from "./fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "hrl-trees-cli-"));
const dbPath = join(dir, "calls.sqlite");
const records: CallRecord[] = [...subAgentRollout(), ...compactionSession().map((r) => ({ ...r, sessionId: "ses_c", rolloutId: "rol_c" })), ...retrySession().map((r) => ({ ...r, sessionId: "ses_r", rolloutId: "rol_r", parentCallId: r.callId === "r3" ? "r2" : r.parentCallId }))];

function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(process.cwd(), "dist", "cli", "main.js"), "trees", ...args], { encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(() => {
  const store = new SqliteStore(dbPath);
  for (const r of records) store.insertCall(r);
  store.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("harnessrl trees", () => {
  it("lists one summary line per rollout without a filter", () => {
    const r = cli("--db", dbPath);
    expect(r.status).toBe(0);
    const lines = r.stdout.split("\n").filter((l) => l.startsWith("rol_"));
    expect(lines.map((l) => l.split(/\s+/)[0])).toEqual(["rol_1", "rol_c", "rol_r"]);
    expect(lines[0]).toMatch(/sessions 2\s+calls 4\s+paths 2/);
  });

  it("draws a rollout: segments with labels, sub-agent links, breaks, retries, token counts and disagreements", () => {
    const a = cli("--db", dbPath, "--rollout", "rol_1");
    expect(a.status).toBe(0);
    expect(a.stdout).toContain("segment 0 main");
    expect(a.stdout).toContain("sub-agent spawned by m1 ses_sub");
    expect(a.stdout).toMatch(/└─ m2 {2}\[main\] {2}prompt \d+ {2}\(\+\d+ tool_output\) {2}completion \d+ {2}trainable \d+/);
    const c = cli("--db", dbPath, "--rollout", "rol_c");
    expect(c.stdout).toContain("segment 1 compaction (compaction) ← k3 · main conversation");
    const r = cli("--db", dbPath, "--session", "ses_r", "--nodes");
    expect(r.stdout).toContain("retry of r2");
    expect(r.stdout).toContain("r3: recorded r2, verified r2b");
    expect(r.stdout).toContain("radix nodes");
  });

  it("--json gives the structured view", () => {
    const r = cli("--db", dbPath, "--rollout", "rol_1", "--json");
    expect(r.status).toBe(0);
    const [view] = JSON.parse(r.stdout) as ForestView[];
    expect(view?.spawnLinks).toEqual([{ sessionId: "ses_sub", segment: 0, rootCallId: "s1", spawnedByCallId: "m1", parentSessionId: "ses_main" }]);
    const main = view?.sessions[0];
    const m1 = main?.calls.find((c) => c.callId === "m1");
    const rec = records.find((x) => x.callId === "m1") as CallRecord;
    expect(m1).toMatchObject({ label: "main", promptTokens: rec.promptTokens.length, completionTokens: rec.completionTokens.length, trainableTokens: rec.completionTokens.length, children: ["m2"] });
    // The main session is linear: one path, so nothing to dedup; its two calls share the first call's tokens.
    expect(main?.paths).toHaveLength(1);
    expect(main?.uniqueTokens).toBe(main?.flatTokens);
    expect(main?.tokensByRole.sampled).toBe(main?.trainableTokens);
  });

  it("reports user errors for a missing store, an unknown rollout and conflicting filters", () => {
    expect(cli("--db", join(dir, "missing.sqlite")).stderr).toContain("no call record store");
    const u = cli("--db", dbPath, "--rollout", "nope");
    expect(u.status).toBe(2);
    expect(u.stderr).toContain("no calls recorded for rollout nope");
    expect(cli("--db", dbPath, "--rollout", "a", "--session", "b").status).toBe(2);
  });
});
