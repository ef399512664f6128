import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CallRecord, SessionInfo } from "../../src/icr/records.js";
import { SqliteStore } from "../../src/store/sqlite.js";

/** Records captured through the real proxy from the four built-in harnesses (test/trees/fixtures, see its note). */
const captured = JSON.parse(readFileSync(join(import.meta.dirname, "..", "trees", "fixtures", "captured-oracle.json"), "utf8")) as {
  sessions: SessionInfo[];
  records: CallRecord[];
  verifier: Record<string, { score: number; subscores: Record<string, number | number[]> }>;
};

const BASH: CallRecord["tools"] = [{ name: "Bash", description: "run a shell command", parameters: { type: "object", properties: { command: { type: "string" } } } }];

export const HARNESSES = ["chat-agent", "claw-agent", "resp-agent", "central-agent"];

/** One metrics.jsonl line of an RL step with the names the orchestrator, worker, scheduler and CAPO write. */
export function metricsLine(step: number): Record<string, unknown> {
  const row: Record<string, unknown> = {
    phase: "rl",
    step,
    policy_version: step + 1,
    time: 1_795_979_000_000 + step * 60_000,
    "reward/mean": 0.3 + 0.05 * step,
    "kl/ref": 0.001 * step,
    "mismatch/mean_abs": 0.01 + 0.001 * step,
    "mismatch/max_abs": 0.2,
    clip_fraction: 0.04,
    is_limited_fraction: 0.01,
    entropy: 1.4 - 0.03 * step,
    grad_norm: 0.8 + 0.1 * Math.sin(step),
    "throughput/rollouts_per_s": 0.5 + 0.01 * step,
    "throughput/trainable_tokens_per_s": 300 + step,
    "staleness/max": step % 2,
    "capo/grad_cosine": 0.2 + 0.01 * step,
    "status/ok": 20,
    "status/task_failed": 4,
  };
  for (const [i, h] of HARNESSES.entries()) {
    row[`pass1/${h}`] = Math.min(1, 0.2 + 0.1 * i + 0.04 * step);
    row[`bandit/prob/${h}`] = 0.25 + 0.02 * (i - 1.5) * Math.cos(step);
    row[`bandit/score/${h}`] = 0.1 * i + 0.01 * step;
  }
  return row;
}

function evalSummary(pass: number): Record<string, unknown> {
  const g = (p: number): Record<string, unknown> => ({ rollouts: 12, infraErrors: 0, tasks: 3, passAt1: p, passAt1Stderr: 0.05, passAtK: p, k: 1, meanScore: p, f1: null, statuses: { ok: 12 }, groupRates: {} });
  return {
    k: 1,
    overall: g(pass),
    byHarness: Object.fromEntries(HARNESSES.map((h, i) => [h, g(Math.min(1, pass + 0.05 * i))])),
    byFamily: { arith: g(pass + 0.1), files: g(pass), lookup: g(Math.max(0, pass - 0.1)) },
    byHarnessFamily: {},
  };
}

/**
 * A run directory built from real components: the real SQLite store holding calls captured from real harness runs
 * (each rollout twice, as two samples of one GRPO group, the second sampling one token differently at its end and
 * failing), the rollouts.jsonl lines, metrics.jsonl lines, evaluations and a byte-tokenizer policy directory.
 */
export function buildDemoRun(dir: string, options: { steps?: number; finished?: boolean } = {}): { rolloutIds: string[] } {
  mkdirSync(join(dir, "policy", "v0001"), { recursive: true });
  writeFileSync(join(dir, "policy", "v0001", "tokenizer_config.json"), JSON.stringify({ harnessrl_tokenizer: "bytes" }));
  const store = new SqliteStore(join(dir, "records.sqlite"));
  const rolloutIds: string[] = [];
  const oldIds = [...new Set(captured.records.map((r) => r.rolloutId as string))];
  try {
    for (const sample of [0, 1]) {
      const suffix = sample === 0 ? "" : "-b";
      const id = (x: string | null): string | null => (x === null ? null : `${x}${suffix}`);
      for (const old of oldIds) {
        // rollout-<task>-<harness>-0 → s1-demo-<task>-<harness>-<sample>, the trainer's id scheme.
        const harness = HARNESSES.find((h) => old.includes(`-${h}-`)) as string;
        const taskId = old.slice("rollout-".length, old.indexOf(`-${harness}-`));
        const rolloutId = `s1-demo-${taskId}-${harness}-${sample}`;
        rolloutIds.push(rolloutId);
        const oldSessions = captured.sessions.filter((x) => x.rolloutId === old);
        for (const s of oldSessions) {
          store.createSession({ ...s, sessionId: id(s.sessionId) as string, rolloutId, parentSessionId: id(s.parentSessionId), spawnedByCallId: id(s.spawnedByCallId) }, `cred-${s.sessionId}${suffix}`);
        }
        const calls = captured.records.filter((r) => r.rolloutId === old);
        const sessionIds = oldSessions.map((x) => id(x.sessionId) as string);
        const history: CallRecord["messages"] = [
          { role: "system", content: `You are ${harness}, an agent working in a sandbox. Use the tools to solve the task.` },
          { role: "user", content: `Solve task ${taskId}.` },
        ];
        const first = calls[0];
        if (harness === "claw-agent" && sample === 0 && first) {
          // An earlier attempt that ended in an infrastructure error and was run again under the same rollout id:
          // its session stays in the store but is not the result's (not in sessionIds).
          const sessionId = `${first.sessionId}-attempt1`;
          store.createSession({ sessionId, rolloutId, parentSessionId: null, spawnedByCallId: null, agentRole: null, harness, createdAt: 900, metadata: {} }, `cred-${sessionId}`);
          store.insertCall({ ...first, callId: `${first.callId}-attempt1`, sessionId, rolloutId, parentCallId: null, spawnedByCallId: null, messages: [...history], tools: BASH });
        }
        calls.forEach((r, i) => {
          const last = i === calls.length - 1;
          const completion = sample === 1 && last && r.completionTokens.length > 0 ? [...r.completionTokens.slice(0, -1), ((r.completionTokens.at(-1) as number) + 1) % 256] : r.completionTokens;
          store.insertCall({ ...r, callId: id(r.callId) as string, sessionId: id(r.sessionId) as string, rolloutId, parentCallId: id(r.parentCallId), spawnedByCallId: id(r.spawnedByCallId), completionTokens: completion, messages: [...history], tools: BASH });
          if (r.response) history.push(r.response, { role: "tool", content: "(tool output)", toolCallId: r.response.toolCalls?.[0]?.id ?? "t" });
        });
        const verifier = captured.verifier[old] ?? { score: 0, subscores: {} };
        const score = sample === 0 ? verifier.score : 0;
        const family = taskId.split("-")[0] as string;
        appendFileSync(
          join(dir, "rollouts.jsonl"),
          `${JSON.stringify({ rolloutId, taskId, harness, sample, family, split: "test", status: score > 0 ? "ok" : "task_failed", score, verifier: { ...verifier, score }, harnessDetail: "exited 0", exitCode: 0, signal: null, stdout: `answer from ${harness}\n`, stderr: "", error: null, sessionIds, calls: calls.length, timings: { startedAt: 1000, sandboxReadyAt: 1100, harnessEndedAt: 4000, settledAt: 4100, verifiedAt: 4200, endedAt: 4300 } })}\n`,
        );
      }
    }
  } finally {
    store.close();
  }
  const steps = options.steps ?? 4;
  writeFileSync(join(dir, "metrics.jsonl"), Array.from({ length: steps }, (_, i) => `${JSON.stringify(metricsLine(i + 1))}\n`).join(""));
  writeFileSync(join(dir, "state.json"), JSON.stringify({ version: 1, step: steps, policyVersion: steps + 1, warmStartDone: true, evalBeforeDone: true, taskCursor: 0, checkpoint: null, startedAt: Date.now() - 600_000, trainMs: 500_000 }));
  writeFileSync(join(dir, "eval-before.json"), JSON.stringify(evalSummary(0.4)));
  writeFileSync(join(dir, "config.yaml"), "name: demo\nadvantage:\n  estimator: grpo\n");
  if (options.finished) {
    writeFileSync(join(dir, "eval-after.json"), JSON.stringify(evalSummary(0.55)));
    writeFileSync(join(dir, "summary.json"), JSON.stringify({ name: "demo", steps, plannedSteps: steps, wallSeconds: 654, policyVersion: steps + 1 }));
  }
  return { rolloutIds };
}
