import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildBatch } from "../../src/batch/build.js";
import type { CallRecord, SessionInfo } from "../../src/icr/records.js";
import { SqliteStore } from "../../src/store/sqlite.js";
import { buildForests, forestsFromStore } from "../../src/trees/forest.js";
import type { RolloutForest } from "../../src/trees/types.js";
import { expectReconstructs } from "./reconstruct.js";

/** Records captured through the real proxy from the four built-in harnesses (see the file's note). */
const captured = JSON.parse(readFileSync(join(import.meta.dirname, "fixtures", "captured-oracle.json"), "utf8")) as { sessions: SessionInfo[]; records: CallRecord[] };

function byHarness(forests: RolloutForest[], harness: string): RolloutForest[] {
  return forests.filter((f) => f.rolloutId.includes(`-${harness}-`));
}

function expectSound(forests: RolloutForest[]): void {
  for (const f of forests) {
    for (const t of f.trees) {
      expectReconstructs(t);
      // The proxy's history planner and the token-wise verification agree on every parent.
      expect(t.disagreements).toEqual([]);
    }
  }
  const opts = { filter: { deadLeaves: false, maxBranches: null } } as const;
  const flat = buildBatch(forests, { ...opts, layout: "flat" });
  const tree = buildBatch(forests, { ...opts, layout: "tree" });
  expect(tree.stats.trainableTokens).toBe(flat.stats.trainableTokens);
  expect(tree.stats.emittedTokens).toBeLessThanOrEqual(flat.stats.emittedTokens);
}

describe("trees over calls captured from real harness runs through the proxy", () => {
  const forests = buildForests(captured.records, captured.sessions);

  it("reconstructs every call of every harness token-exactly, with no parent disagreements", () => {
    expect(forests).toHaveLength(12);
    expectSound(forests);
  });

  it("chat-agent and resp-agent: one linear main segment per rollout", () => {
    for (const f of [...byHarness(forests, "chat-agent"), ...byHarness(forests, "resp-agent")]) {
      expect(f.trees).toHaveLength(1);
      expect(f.trees[0]?.segments.map((s) => s.label)).toEqual(["main"]);
    }
  });

  it("claw-agent: compaction starts a segment linked to the compacted call", () => {
    const compacted = byHarness(forests, "claw-agent").flatMap((f) => f.trees[0]?.segments.filter((s) => s.label === "compaction") ?? []);
    expect(compacted.length).toBeGreaterThan(0);
    for (const s of compacted) expect(s.linkedFrom).not.toBeNull();
  });

  it("central-agent: sub-agents inside the main session become sub-agent segments linked to the central call that spawned them", () => {
    for (const f of byHarness(forests, "central-agent")) {
      const t = f.trees[0];
      if (!t) throw new Error("no tree");
      expect(t.subAgent).toBe(false);
      expect(t.segments[0]?.label).toBe("main");
      const subs = t.segments.filter((s) => s.label === "sub-agent");
      expect(subs.length).toBeGreaterThan(0);
      const mainCalls = new Set(t.segments[0]?.callIds);
      for (const s of subs) expect(mainCalls.has(s.spawnedBy as string)).toBe(true);
      expect(f.spawnLinks.map((l) => l.segment)).toEqual(subs.map((s) => s.index));
    }
  });
});

describe("trees from a live capture: harnessrl rollout → records.sqlite → trees", () => {
  it("runs two built-in harnesses through the proxy in sandboxes and reconstructs their records", () => {
    const dir = mkdtempSync(join(tmpdir(), "hrl-capture-"));
    try {
      const r = spawnSync(process.execPath, [join(process.cwd(), "dist", "cli", "main.js"), "rollout", "--engine", "oracle", "--tasks", "lookup:test?n=1", "--harness", "claw-agent,central-agent", "--concurrency", "2", "--out", dir], { encoding: "utf8", timeout: 120_000 });
      expect(r.status, r.stderr).toBe(0);
      const store = new SqliteStore(join(dir, "records.sqlite"), { readonly: true });
      try {
        const live = forestsFromStore(store);
        expect(live).toHaveLength(2);
        expectSound(live);
        const labels = live.flatMap((f) => f.trees.flatMap((t) => t.segments.map((s) => s.label)));
        expect(labels).toContain("compaction");
        expect(labels).toContain("sub-agent");
      } finally {
        store.close();
      }
      // The CLI accepts the run directory itself.
      const cli = spawnSync(process.execPath, [join(process.cwd(), "dist", "cli", "main.js"), "trees", "--db", dir], { encoding: "utf8" });
      expect(cli.status, cli.stderr).toBe(0);
      expect(cli.stdout).toMatch(/claw-agent-0 +sessions 1/);
      // The central agent's sub-agents each have a session of their own (children of the central session).
      expect(cli.stdout).toMatch(/central-agent-0 +sessions [2-9]/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
