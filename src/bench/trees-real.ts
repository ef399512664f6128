/**
 * `npm run bench:trees-real`: dedup of the tree layout on traces recorded from the real harness CLIs (Claude Code, Codex,
 * Qwen Code, pi, OpenClaw) through the capture proxy. Each harness runs, in bwrap sandboxes, GRPO-shaped groups (tasks ×
 * samples) of a task with ≥ 5 tool turns; a scripted model plays the policy, calling the harness's own shell tool with a
 * different command line in every rollout, then finishing. The recorded calls are reconstructed into trees and packed:
 * tree-packed tokens are compared with one row per root-to-leaf path (flat) and with one sample per call.
 * Writes docs/bench/trees-real.json (`--out`), and with `--save FILE` the records and sessions as JSON for
 * `bench:trees --traces`.
 *
 * Options: --harnesses a,b (default all five), --tasks N (2), --samples N (4), --turns N (tool turns, 5),
 * --concurrency N (4).
 */
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { registerBuiltins } from "../builtins.js";
import { registerEngine } from "../engine/registry.js";
import { REAL_HARNESS_SHELL_TOOLS } from "../harness/real/index.js";
import { createScriptedEngine, type ScriptReply, type ScriptRequest } from "../engine/scripted/index.js";
import { runRollouts } from "../rollout/runner.js";
import { RolloutStack } from "../rollout/stack.js";
import type { CallRecord, SessionInfo } from "../icr/records.js";
import type { Task } from "../tasks/task.js";
import { dedupStats, round3, type DedupStats } from "./dedup.js";

const WORDS = ["alpha", "bravo", "cedar", "delta", "ember", "fjord", "grove", "harbor", "indigo", "juniper", "kestrel", "lumen"];

/** Plays the model: `turns` shell calls whose text depends on the session (rollouts of a group diverge), then "Done.". */
function makeScript(turns: number): (req: ScriptRequest) => ScriptReply {
  return (req) => {
    const want = REAL_HARNESS_SHELL_TOOLS[req.harness ?? ""];
    const tool = want ? req.tools.find((t) => t.name === want.tool) : undefined;
    const done = req.messages.filter((m) => m.role === "tool").length;
    if (!want || !tool || done >= turns) return { content: "Done." };
    const h = createHash("sha256").update(`${req.sessionId}:${done}`).digest();
    const words = Array.from({ length: 3 + ((h[0] ?? 0) % 4) }, (_, i) => WORDS[(h[i + 1] ?? 0) % WORDS.length]).join(" ");
    return { content: `Note ${done + 1}.`, toolCalls: [{ name: tool.name, arguments: { [want.arg]: `echo 'note ${done + 1}: ${words}' | tee -a notes.txt` } }] };
  };
}

function notesTask(i: number, turns: number): Task {
  return {
    id: `notes-${i}`,
    family: "bench-notes",
    split: "test",
    prompt: `Project ${i}: append ${turns} short notes to notes.txt with your shell tool, one command per turn, then stop.`,
    files: { "README.md": `Workspace ${i} for the tree dedup benchmark.\n` },
    verifier: {
      files: {},
      command: ["sh", "-c", `n=$(wc -l < notes.txt 2>/dev/null || echo 0); if [ "$n" -ge ${turns} ]; then echo '{"score":1,"subscores":{}}'; else echo '{"score":0,"subscores":{}}'; fi`],
    },
    metadata: {},
  };
}

interface HarnessResult {
  rollouts: number;
  ok: number;
  statuses: Record<string, number>;
  meanCallsPerRollout: number;
  meanMainTurns: number;
  meanPromptTokens: number;
  breaks: Record<string, number>;
  /** All rollouts of the harness packed together (groups share their root context). */
  grouped: DedupStats;
  /** Each rollout packed on its own (no sharing across rollouts). */
  perRollout: Omit<DedupStats, "sharedRootTokens">;
}

function perRolloutStats(records: CallRecord[], sessions: SessionInfo[]): Omit<DedupStats, "sharedRootTokens"> {
  const byRollout = new Map<string, CallRecord[]>();
  for (const r of records) {
    const key = r.rolloutId ?? r.sessionId;
    const list = byRollout.get(key);
    if (list) list.push(r);
    else byRollout.set(key, [r]);
  }
  const sum = { calls: 0, paths: 0, perCallTokens: 0, flatTokens: 0, treeTokens: 0 };
  for (const recs of byRollout.values()) {
    const d = dedupStats(recs, sessions);
    sum.calls += d.calls;
    sum.paths += d.paths;
    sum.perCallTokens += d.perCallTokens;
    sum.flatTokens += d.flatTokens;
    sum.treeTokens += d.treeTokens;
  }
  return { ...sum, treeOverFlat: round3(sum.treeTokens / sum.flatTokens), treeOverPerCall: round3(sum.treeTokens / sum.perCallTokens) };
}

async function main(): Promise<void> {
  registerBuiltins();
  const { values } = parseArgs({
    options: {
      harnesses: { type: "string" },
      tasks: { type: "string" },
      samples: { type: "string" },
      turns: { type: "string" },
      concurrency: { type: "string" },
      out: { type: "string" },
      save: { type: "string" },
    },
  });
  const harnesses = (values.harnesses ?? Object.keys(REAL_HARNESS_SHELL_TOOLS).join(",")).split(",").filter(Boolean);
  const turns = Number(values.turns ?? 5);
  const tasks = Array.from({ length: Number(values.tasks ?? 2) }, (_, i) => notesTask(i, turns));
  const samples = Number(values.samples ?? 4);
  const out = resolve(values.out ?? "docs/bench/trees-real.json");

  registerEngine({ name: "bench-trees-real", summary: "scripted model for bench:trees-real", create: async () => createScriptedEngine(makeScript(turns), { modelId: "policy" }) });
  const stack = await RolloutStack.open({ engine: "bench-trees-real:", store: "memory", sandbox: "bwrap", sampling: { maxTokens: 256 } });
  const byHarness: Record<string, HarnessResult> = {};
  const saved: { records: CallRecord[]; sessions: SessionInfo[] } = { records: [], sessions: [] };
  try {
    for (const harness of harnesses) {
      const t0 = performance.now();
      const results = await runRollouts(
        stack,
        { tasks, harnesses: [harness], samples, idPrefix: `bench-${harness}` },
        { concurrency: Number(values.concurrency ?? 4), settings: { harnessTimeoutMs: 300_000, maxTurns: turns + 2 } },
      );
      const records = results.flatMap((r) => stack.store.listCalls({ rolloutId: r.rolloutId })).filter((c) => c.status === "ok");
      const sessions = results.flatMap((r) => stack.store.listSessions({ rolloutId: r.rolloutId }));
      saved.records.push(...records);
      saved.sessions.push(...sessions);
      const statuses: Record<string, number> = {};
      for (const r of results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      const breaks: Record<string, number> = {};
      for (const c of records) if (c.break) breaks[c.break.kind] = (breaks[c.break.kind] ?? 0) + 1;
      // Main turns: calls that offered the shell tool (side calls such as titles carry no tools).
      const mainTurns = records.filter((c) => c.tools.some((t) => t.name === REAL_HARNESS_SHELL_TOOLS[harness]?.tool)).length;
      byHarness[harness] = {
        rollouts: results.length,
        ok: results.filter((r) => r.status === "ok" && r.score === 1).length,
        statuses,
        meanCallsPerRollout: round3(records.length / results.length),
        meanMainTurns: round3(mainTurns / results.length),
        meanPromptTokens: Math.round(records.reduce((n, c) => n + c.promptTokens.length, 0) / Math.max(1, records.length)),
        breaks,
        grouped: dedupStats(records, sessions),
        perRollout: perRolloutStats(records, sessions),
      };
      console.error(`[trees-real] ${harness}: ${JSON.stringify(byHarness[harness])} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
    }
  } finally {
    await stack.close();
  }
  const result = {
    benchmark: "trees-real",
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    loadAverage1m: round3(loadavg()[0] ?? 0),
    setup: { tasks: tasks.length, samples, toolTurns: turns, tokenizer: "tiny byte-level (1 token per byte)" },
    byHarness,
    targets: { treeOverFlatOnFivePlusTurns: 1 / 3 },
  };
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2) + "\n");
  if (values.save) writeFileSync(resolve(values.save), JSON.stringify(saved) + "\n");
  console.log(JSON.stringify(result, null, 2));
}

await main();
