import { appendFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { PROGRESS_FILE, ProgressFile } from "../../src/core/progress-file.js";
import type { ChartData } from "../../src/dashboard/chart-data.js";
import type { RolloutPage } from "../../src/dashboard/rollout-index.js";
import type { RolloutDetail } from "../../src/dashboard/rollout-view.js";
import type { RunSummary } from "../../src/dashboard/run-data.js";
import { startDashboard, type Dashboard } from "../../src/dashboard/server.js";
import { EvalJournal } from "../../src/eval/journal.js";
import type { RolloutResult, RolloutStatus } from "../../src/tasks/rollout-result.js";
import { result } from "../advantage/fixtures.js";
import { buildDemoRun, metricsLine } from "./demo-run.js";
import { getJson, rawGet } from "./http.js";

const root = mkdtempSync(join(tmpdir(), "harnessrl-dash-"));
let dash: Dashboard;

beforeAll(async () => {
  buildDemoRun(join(root, "runs", "demo"));
  buildDemoRun(join(root, "runs", "done"), { steps: 6, finished: true });
  mkdirSync(join(root, "runs", "not-a-run"));
  // A secret next to the runs directory, and links inside a run that point at it.
  writeFileSync(join(root, "secret.txt"), "TOP-SECRET");
  symlinkSync(join(root, "secret.txt"), join(root, "runs", "demo", "report.html"));
  writeFileSync(join(root, "runs", "done", "report.html"), "<html>done report</html>");
  dash = await startDashboard({ runs: join(root, "runs"), port: 0 });
});

afterAll(async () => {
  await dash?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("dashboard server over run directories", () => {
  it("lists the runs with status, step, policy version and before/after pass@1", async () => {
    const runs = await getJson<RunSummary[]>(dash.port, "/api/runs");
    expect(runs.map((r) => r.id).sort()).toEqual(["demo", "done"]);
    const done = runs.find((r) => r.id === "done") as RunSummary;
    expect(done).toMatchObject({ status: "finished", step: 6, policyVersion: 7, passBefore: 0.4, passAfter: 0.55, wallSeconds: 654, rollouts: 24 });
    const demo = runs.find((r) => r.id === "demo") as RunSummary;
    expect(demo).toMatchObject({ status: "running", step: 4, passAfter: null });
  });

  it("gives a run's charts grouped as the static report groups them, and its evaluations", async () => {
    const run = await getJson<{ charts: ChartData[]; evalBefore: { byFamily: Record<string, unknown> } }>(dash.port, "/api/runs/done");
    const byId = new Map(run.charts.map((c) => [c.id, c]));
    expect(byId.get("pass1")?.names.sort()).toEqual(["pass1/central-agent", "pass1/chat-agent", "pass1/claw-agent", "pass1/resp-agent"]);
    expect(byId.get("reward")?.x).toEqual([1, 2, 3, 4, 5, 6]);
    expect(run.charts.some((c) => c.names.includes("bandit/prob/chat-agent"))).toBe(true);
    expect(run.charts.some((c) => c.names.includes("time"))).toBe(false);
    expect(Object.keys(run.evalBefore.byFamily)).toEqual(["arith", "files", "lookup"]);
  });

  it("filters, sorts by reward and pages the rollouts table on the server", async () => {
    const all = await getJson<RolloutPage>(dash.port, "/api/runs/demo/rollouts?limit=5");
    expect(all.total).toBe(24);
    expect(all.rows).toHaveLength(5);
    expect(all.facets.harnesses).toEqual(["central-agent", "chat-agent", "claw-agent", "resp-agent"]);
    const claw = await getJson<RolloutPage>(dash.port, "/api/runs/demo/rollouts?harness=claw-agent&family=arith&sort=-reward");
    expect(claw.total).toBe(2);
    expect(claw.rows.map((r) => r.score)).toEqual([1, 0]);
    const failed = await getJson<RolloutPage>(dash.port, "/api/runs/demo/rollouts?status=task_failed&step=1&limit=100");
    expect(failed.rows.every((r) => r.status === "task_failed" && r.step === 1)).toBe(true);
    const p1 = await getJson<RolloutPage>(dash.port, "/api/runs/demo/rollouts?sort=reward&limit=10");
    const p2 = await getJson<RolloutPage>(dash.port, "/api/runs/demo/rollouts?sort=reward&limit=10&offset=10");
    expect(new Set([...p1.rows, ...p2.rows].map((r) => r.rolloutId)).size).toBe(20);
    expect(p1.rows.map((r) => r.score)).toEqual([...p1.rows.map((r) => r.score)].sort((a, b) => a - b));
  });

  it("shows a rollout: transcript, decoded token view coloured by its group advantage, breaks and the group's prefix tree", async () => {
    const rows = await getJson<RolloutPage>(dash.port, "/api/runs/demo/rollouts?harness=claw-agent&family=files&sort=-reward");
    const best = rows.rows[0]?.rolloutId as string;
    const d = await getJson<RolloutDetail>(dash.port, `/api/runs/demo/rollouts/${encodeURIComponent(best)}`);
    expect(d.calls.length).toBeGreaterThan(0);
    const first = d.calls[0] as RolloutDetail["calls"][number];
    expect(first.messages[0]?.role).toBe("system");
    expect(first.tokens.text?.join("")).toContain("Bash");
    expect(d.advantage?.value).toBeGreaterThan(0);
    expect(d.groupTree?.rollouts).toHaveLength(2);
    // The two samples share everything but the last sampled token: one branch point near the end, a leaf each.
    const tree = d.groupTree as NonNullable<RolloutDetail["groupTree"]>;
    expect(tree.tokens).toBeGreaterThan(100);
    expect(tree.children.map((c) => c.tokens)).toEqual([1, 1]);
    expect(tree.children.map((c) => c.meanReward).sort()).toEqual([0, 1]);
    const worse = await getJson<RolloutDetail>(dash.port, `/api/runs/demo/rollouts/${encodeURIComponent(rows.rows[1]?.rolloutId as string)}`);
    expect(worse.advantage?.value).toBeLessThan(0);
    // An earlier attempt of the best rollout ended in an infrastructure error and was run again: its session is
    // named as such and none of its tokens is shown as trained; the other sample had no retry.
    expect(d.earlierAttemptSessions).toHaveLength(1);
    const retried = d.calls.filter((c) => d.earlierAttemptSessions.includes(c.sessionId));
    expect(retried).toHaveLength(1);
    expect(retried.every((c) => c.tokens.ignored.every((x) => x === 1))).toBe(true);
    expect(d.calls.filter((c) => !d.earlierAttemptSessions.includes(c.sessionId)).some((c) => c.tokens.ignored.includes(0))).toBe(true);
    expect(worse.earlierAttemptSessions).toEqual([]);
    // History breaks the proxy recorded reach the page with their kind, on the call and in the session trees.
    const all = await getJson<RolloutPage>(dash.port, "/api/runs/demo/rollouts?limit=100");
    const details = await Promise.all(all.rows.map((r) => getJson<RolloutDetail>(dash.port, `/api/runs/demo/rollouts/${encodeURIComponent(r.rolloutId)}`)));
    const broken = details.flatMap((x) => x.calls.filter((c) => c.break !== null));
    expect(broken.length).toBeGreaterThan(0);
    expect(typeof broken[0]?.break?.kind).toBe("string");
    const treeBreaks = details.flatMap((x) => x.trees?.sessions.flatMap((s) => s.calls.filter((c) => c.break !== null)) ?? []);
    expect(treeBreaks.length).toBe(broken.length);
  });

  it("pages the calls table from the store, filtered by harness, status and step", async () => {
    const page = await getJson<{ total: number; rows: { harness: string; callId: string }[] }>(dash.port, "/api/runs/demo/calls?harness=chat-agent&limit=3");
    expect(page.rows).toHaveLength(3);
    expect(page.rows.every((r) => r.harness === "chat-agent")).toBe(true);
    const step1 = await getJson<{ total: number }>(dash.port, "/api/runs/demo/calls?step=1");
    const all = await getJson<{ total: number }>(dash.port, "/api/runs/demo/calls");
    expect(step1.total).toBe(all.total);
    expect((await getJson<{ total: number }>(dash.port, "/api/runs/demo/calls?step=2")).total).toBe(0);
  });

  it("never serves a file outside the run directories, whatever the path says", async () => {
    const attempts = [
      "/../secret.txt",
      "/../../../../etc/passwd",
      "/%2e%2e/%2e%2e/etc/passwd",
      "/assets/..%2f..%2f..%2fpackage.json",
      "/assets/%2e%2e/%2e%2e/package.json",
      "/report/..%2fsecret.txt",
      "/report/..",
      "/report/demo",
      "/api/runs/..%2f..%2fsecret.txt",
      "/api/runs/%2e%2e",
      "/api/runs/demo/rollouts/..%2f..%2f..%2fsecret.txt",
      "/api/runs/demo/../../secret.txt",
      "/api/compare?runs=..,../..,demo/..,demo&metric=x",
      "//etc/passwd",
      "/static/app.js",
      "/assets/uplot.js/../../../package.json",
    ];
    for (const path of attempts) {
      const r = await rawGet(dash.port, path);
      expect(r.body, path).not.toContain("TOP-SECRET");
      expect(r.body, path).not.toContain("root:x:");
      expect(r.body, path).not.toContain('"name": "harnessrl"');
      // The compare chart ignores ids that are no run (it answers with the valid ones); everything else is refused.
      if (path.startsWith("/api/compare")) expect(JSON.parse(r.body).names, path).toEqual(["demo"]);
      else expect([400, 404], path).toContain(r.status);
    }
    // A run's own report is served by its fixed name (the one in `demo` is a link out of the run: refused above).
    const report = await rawGet(dash.port, "/report/done");
    expect(report.status).toBe(200);
    expect(report.body).toContain("done report");
    expect((await rawGet(dash.port, "/assets/uplot.js")).status).toBe(200);
  });

  it("refuses requests whose Host is not a loopback name (DNS rebinding), and writes", async () => {
    expect((await rawGet(dash.port, "/api/runs", { host: "evil.example:80" })).status).toBe(403);
    const post = await new Promise<number>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port: dash.port, path: "/api/runs", method: "POST" }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end();
    });
    expect(post).toBe(405);
  });

  it("announces a new metrics line and a finished rollout on the event stream within 2 s", async () => {
    const events: string[] = [];
    const req = request({ host: "127.0.0.1", port: dash.port, path: "/api/events?run=demo" });
    const opened = new Promise<void>((resolve, reject) => {
      req.on("response", (res) => {
        res.setEncoding("utf8");
        res.on("data", (c: string) => events.push(c));
        resolve();
      });
      req.on("error", reject);
    });
    req.end();
    await opened;
    const t0 = Date.now();
    appendFileSync(join(root, "runs", "demo", "metrics.jsonl"), `${JSON.stringify(metricsLine(5))}\n`);
    const seen = async (pred: (text: string) => boolean): Promise<number> => {
      for (let i = 0; i < 40; i++) {
        if (pred(events.join(""))) return Date.now() - t0;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`no event in 4 s: ${events.join("")}`);
    };
    expect(await seen((t) => t.includes('"metricsLines":5'))).toBeLessThan(2000);
    appendFileSync(join(root, "runs", "demo", "rollouts.jsonl"), `${JSON.stringify({ rolloutId: "s2-demo-late-chat-agent-0", taskId: "late", harness: "chat-agent", family: "arith", status: "ok", score: 1, calls: 0 })}\n`);
    await seen((t) => t.includes("s2-demo-late-chat-agent-0"));
    req.destroy();
  });
});

describe("dashboard access control", () => {
  it("refuses to listen beyond loopback without a token", async () => {
    await expect(startDashboard({ runs: join(root, "runs"), host: "0.0.0.0", port: 0 })).rejects.toMatchObject({ code: "dashboard_token_required" });
    await expect(startDashboard({ runs: join(root, "runs"), host: "0.0.0.0", port: 0, token: "short" })).rejects.toBeInstanceOf(UserError);
  });

  it("answers 401 to requests without the token when not on loopback, and accepts header, cookie and ?token=", async () => {
    const token = "0123456789abcdef-token";
    const open = await startDashboard({ runs: join(root, "runs"), host: "0.0.0.0", port: 0, token });
    try {
      for (const path of ["/", "/api/runs", "/assets/app.js", "/api/events", "/report/done"]) expect((await rawGet(open.port, path)).status, path).toBe(401);
      expect((await rawGet(open.port, "/api/runs", { authorization: "Bearer wrong-token-0123456789" })).status).toBe(401);
      expect((await rawGet(open.port, "/api/runs", { authorization: `Bearer ${token}` })).status).toBe(200);
      const page = await rawGet(open.port, `/?token=${token}`);
      expect(page.status).toBe(200);
      const cookie = String(page.headers["set-cookie"]).split(";")[0] as string;
      expect(cookie).toContain("harnessrl_dashboard=");
      expect((await rawGet(open.port, "/api/runs", { cookie })).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  it("shows an evaluation in progress from its journal (done of planned, pass so far) and nothing once it has every result", async () => {
    const dir = join(root, "runs", "evaluating");
    buildDemoRun(dir, { steps: 0 });
    const key = { label: "eval-before", policy: "v1", taskIds: ["t0", "t1", "t2", "t3", "t4"], harnesses: ["pi"], samples: 1 };
    const { journal } = EvalJournal.open(join(dir, "evals", "eval-before.jsonl"), key);
    const r = (task: string, score: number, status: RolloutStatus = score >= 1 ? "ok" : "task_failed"): RolloutResult => result(`eval-before-${task}-pi-0`, task, "pi", score, status);
    journal.append(r("t0", 1));
    journal.append(r("t1", 0));
    journal.append(r("t2", 0, "infra_error"));
    // A line still being written is not counted.
    appendFileSync(journal.path, '{"rolloutId":"eval-before-t3');
    const listed = (await getJson<RunSummary[]>(dash.port, "/api/runs")).find((x) => x.id === "evaluating");
    expect(listed?.evaluating).toMatchObject({ label: "eval-before", policy: "v1", done: 3, total: 5, passed: 1, passAt1: 0.5 });
    expect((await getJson<{ summary: RunSummary }>(dash.port, "/api/runs/evaluating")).summary.evaluating?.done).toBe(3);
    expect((await getJson<RunSummary[]>(dash.port, "/api/runs")).find((x) => x.id === "done")?.evaluating).toBeNull();

    const resumed = EvalJournal.open(journal.path, key).journal;
    resumed.append(r("t3", 1));
    resumed.append(r("t4", 1));
    expect((await getJson<RunSummary[]>(dash.port, "/api/runs")).find((x) => x.id === "evaluating")?.evaluating).toBeNull();
  });

  it("shows the long work a running run reports in progress.json (a warm start commits nothing for many minutes), and nothing once the run stopped", async () => {
    const dir = join(root, "runs", "warming");
    mkdirSync(dir, { recursive: true });
    // A warm start in its SFT phase: only config.yaml and demos.sqlite exist, and neither changes while SFT runs.
    writeFileSync(join(dir, "state.json"), JSON.stringify({ version: 1, step: 0, policyVersion: 0, warmStartDone: false, evalBeforeDone: false, taskCursor: 0, checkpoint: null, startedAt: Date.now() - 3_600_000, trainMs: 0 }));
    utimesSync(join(dir, "state.json"), new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
    const stale = (await getJson<RunSummary[]>(dash.port, "/api/runs")).find((x) => x.id === "warming");
    expect(stale).toMatchObject({ status: "stopped", progress: [] });
    const sink = new ProgressFile(join(dir, PROGRESS_FILE));
    sink.update({ label: "sft", done: 60, total: 360, detail: "epoch 2/6 nll 0.310", startedAt: Date.now() });
    const live = (await getJson<RunSummary[]>(dash.port, "/api/runs")).find((x) => x.id === "warming");
    expect(live?.status).toBe("running");
    expect(live?.progress).toMatchObject([{ label: "sft", done: 60, total: 360, detail: "epoch 2/6 nll 0.310" }]);
    expect((await getJson<{ summary: RunSummary }>(dash.port, "/api/runs/warming")).summary.progress).toHaveLength(1);
    // A killed run's file goes stale: the run reads as stopped and its last progress is not shown as current.
    const old = new Date(Date.now() - 600_000);
    utimesSync(join(dir, PROGRESS_FILE), old, old);
    expect((await getJson<RunSummary[]>(dash.port, "/api/runs")).find((x) => x.id === "warming")).toMatchObject({ status: "stopped", progress: [] });
    // Something else written under that name is no progress.
    writeFileSync(join(dir, PROGRESS_FILE), '{"version": 1, "tasks": "all done"}');
    expect((await getJson<RunSummary[]>(dash.port, "/api/runs")).find((x) => x.id === "warming")).toMatchObject({ status: "running", progress: [] });
  });
});

