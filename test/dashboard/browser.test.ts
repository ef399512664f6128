import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROGRESS_FILE, ProgressFile } from "../../src/core/progress-file.js";
import { startDashboard, type Dashboard } from "../../src/dashboard/server.js";
import { EvalJournal } from "../../src/eval/journal.js";
import { writeReport } from "../../src/report/write.js";
import { result } from "../advantage/fixtures.js";
import { startClusterDashboard, type ClusterDashboard, type ClusterFixture } from "./cluster-fixture.js";
import { buildDemoRun, metricsLine } from "./demo-run.js";

/** Debian's chromium (scripts/setup.mjs installs it); playwright-core drives it and downloads nothing. */
const CHROMIUM = process.env.HARNESSRL_CHROMIUM ?? "/usr/bin/chromium";
const repo = join(import.meta.dirname, "..", "..");
/** Screenshots of every page: test artifacts (gitignored); with HARNESSRL_WRITE_DOCS=1 also the ones docs/ shows. */
const ARTIFACTS = join(repo, ".cache", "dashboard-screenshots");
const DOCS = process.env.HARNESSRL_WRITE_DOCS === "1" ? join(repo, "docs", "dashboard") : null;
const IN_DOCS = new Set(["runs", "run", "rollout", "cluster", "report"]);

const root = mkdtempSync(join(tmpdir(), "harnessrl-dash-browser-"));
let dash: Dashboard;
/** A second dashboard over the same runs, given a cluster (a private redis-server with nodes and jobs). */
let clusterDash: Dashboard;
let cluster: ClusterDashboard | undefined;
let fixture: ClusterFixture;
/** node-b's heartbeat expires this long after the fixture starts (the page must then show it lost). */
const SHORT_TTL_MS = 4000;
let browser: Browser;
let page: Page;
const problems: string[] = [];

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
  if (DOCS && IN_DOCS.has(name)) await page.screenshot({ path: join(DOCS, `${name}.png`) });
}

/** The page fits the 1280×800 viewport's width (no sideways scrolling of the whole page) and shows no stray JS values. */
async function fitsWidth(): Promise<void> {
  const width = Number(await page.evaluate("document.documentElement.scrollWidth"));
  expect(width).toBeLessThanOrEqual(1280);
  expect(await page.locator("body").innerText()).not.toMatch(/\b(null|undefined|NaN)\b|\[object /);
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  if (DOCS) mkdirSync(DOCS, { recursive: true });
  buildDemoRun(join(root, "runs", "live-run"));
  // The live run is in the middle of an evaluation: 3 of 5 rollouts journaled, 1 of the 2 scored ones passed.
  const { journal } = EvalJournal.open(join(root, "runs", "live-run", "evals", "eval-4.jsonl"), { label: "eval-4", policy: "v4", taskIds: ["t0", "t1", "t2", "t3", "t4"], harnesses: ["pi"], samples: 1 });
  for (const [task, score, status] of [["t0", 1, "ok"], ["t1", 0, "task_failed"], ["t2", 0, "infra_error"]] as const) journal.append(result(`eval-4-${task}-pi-0`, task, "pi", score, status));
  // Its progress.json: the RL steps, and the evaluation (shown once, by its journal's line with pass@1 so far).
  const sink = new ProgressFile(join(root, "runs", "live-run", PROGRESS_FILE));
  sink.update({ label: "train", done: 4, total: 12, detail: "reward 0.542 v5", startedAt: Date.now() });
  sink.update({ label: "eval-4", done: 3, total: 5, detail: "", startedAt: Date.now() });
  buildDemoRun(join(root, "runs", "finished-run"), { steps: 6, finished: true });
  dash = await startDashboard({ runs: join(root, "runs"), port: 0 });
  cluster = await startClusterDashboard(join(root, "runs"), join(root, "redis"), SHORT_TTL_MS);
  ({ fixture, dash: clusterDash } = cluster);
  if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM} (npm run setup installs Debian's)`);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  // An event stream or a poll that the page cancels when it moves on is aborted, not failed.
  page.on("requestfailed", (r) => {
    if (!(r.url().includes("/api/") && r.failure()?.errorText === "net::ERR_ABORTED")) problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await dash?.close();
  await cluster?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("the dashboard in a real browser (Debian chromium via playwright-core)", () => {
  it("runs page: both runs listed with status and pass@1, the compare chart drawn", async () => {
    await page.goto(dash.url);
    await page.locator("tr[data-run]").nth(1).waitFor();
    expect(await page.locator("tr[data-run]").count()).toBe(2);
    await expect.poll(() => page.locator("#compare-chart").getAttribute("data-points")).toBe("6");
    expect(await page.locator("#compare-chart canvas").count()).toBe(1);
    expect(await page.locator('tr[data-run="finished-run"]').innerText()).toContain("55.0%");
    const live = await page.locator('tr[data-run="live-run"]').innerText();
    expect(live).toContain("eval-4 3/5, pass@1 so far 50.0%");
    expect(live).toContain("train 4/12 reward 0.542 v5");
    expect(live.match(/eval-4/g)).toHaveLength(1);
    await fitsWidth();
    await shot("runs");
    expect(problems).toEqual([]);
  }, 30_000);

  it("run page: every metric group charted, evaluations per harness and family", async () => {
    await page.locator('a[href="#/run/finished-run"]').click();
    await page.locator('[data-chart="reward"] canvas').waitFor();
    const charts = await page.locator("[data-chart]").count();
    expect(charts).toBeGreaterThanOrEqual(10);
    expect(await page.locator("[data-chart] canvas").count()).toBe(charts);
    for (const id of ["reward", "pass1", "kl-mismatch", "clip", "entropy", "grad-norm"]) expect(await page.locator(`[data-chart="${id}"]`).getAttribute("data-points"), id).toBe("6");
    expect(await page.locator("main").innerText()).toContain("per task family");
    await fitsWidth();
    await shot("run");
    expect(problems).toEqual([]);
  }, 30_000);

  it("a metrics line appended while the page is open shows up live, without reload", async () => {
    await page.goto(`${dash.url}#/run/live-run`);
    await page.locator('[data-chart="reward"] canvas').waitFor();
    expect(await page.locator('[data-chart="reward"]').getAttribute("data-points")).toBe("4");
    await page.evaluate("window.marker = 1");
    const t0 = Date.now();
    appendFileSync(join(root, "runs", "live-run", "metrics.jsonl"), `${JSON.stringify(metricsLine(5))}\n`);
    // Polled from here: the page's CSP forbids the string evaluation waitForFunction would use.
    while ((await page.locator('[data-chart="reward"]').getAttribute("data-points")) !== "5" && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 25));
    const ms = Date.now() - t0;
    console.log(`metrics line shown live after ${ms} ms`);
    expect(ms).toBeLessThan(2000);
    // The same document: no reload happened.
    expect(await page.evaluate("window.marker")).toBe(1);
    expect(problems).toEqual([]);
  }, 30_000);

  it("rollouts table: filtered and sorted on the server; clicking a rollout shows its transcript, token view and group tree", async () => {
    await page.locator('a[href="#/run/live-run/rollouts"]').click();
    await page.locator("#table tbody tr").first().waitFor();
    expect(await page.locator("#table tbody tr").count()).toBe(24);
    await page.locator('select[name="harness"]').selectOption("claw-agent");
    await expect.poll(() => page.locator("#table tbody tr").count()).toBe(6);
    await page.locator('select[name="sort"]').selectOption("-reward");
    await expect.poll(() => page.locator("#table tbody tr").first().innerText()).toContain("claw-agent");
    await fitsWidth();
    await shot("rollouts");
    await page.locator("#table tbody tr a").first().click();
    await page.locator(".transcript").first().waitFor();
    expect(await page.locator(".msg.response").count()).toBeGreaterThan(0);
    expect(await page.locator(".tokens span.tok").count()).toBeGreaterThan(20);
    expect(await page.locator("#group-tree li").count()).toBeGreaterThanOrEqual(3);
    expect(await page.locator(".tokens").first().isVisible()).toBe(true);
    // The fixture's best claw-agent rollout was retried once after an infrastructure error: that session is labelled.
    expect(await page.locator(".session.retried").count()).toBe(1);
    expect(await page.locator(".session.retried > h3").innerText()).toContain("earlier attempt");
    await fitsWidth();
    await shot("rollout");
    expect(problems).toEqual([]);
  }, 30_000);

  it("calls table pages through the store by sequence number", async () => {
    await page.goto(`${dash.url}#/run/live-run/calls`);
    await page.locator("#table tbody tr").first().waitFor();
    expect(await page.locator("#table tbody tr").count()).toBe(50);
    const firstPage = await page.locator("#table tbody tr").first().innerText();
    await page.getByRole("button", { name: "older ›" }).click();
    await expect.poll(() => page.locator("#table tbody tr").first().innerText()).not.toBe(firstPage);
    await page.getByRole("button", { name: "‹ newer" }).click();
    await expect.poll(() => page.locator("#table tbody tr").first().innerText()).toBe(firstPage);
    expect(await page.locator(".pager").innerText()).toMatch(/calls \d+…\d+ \(seq\) · \d+ in all/);
    await fitsWidth();
    await shot("calls");
    expect(problems).toEqual([]);
  }, 30_000);

  it("cluster page: linked only when the dashboard has a cluster; nodes with capacity, health and memory cap, jobs waiting / running / failed with reasons, refreshed live", async () => {
    await page.goto(dash.url);
    await page.locator("tr[data-run]").first().waitFor();
    expect(await page.locator("#cluster-link").isHidden()).toBe(true);
    // node-b's short heartbeat, renewed now so the page sees it before it expires.
    await fixture.beatShortLived();
    await page.goto(clusterDash.url);
    await page.locator("#cluster-link").click();
    await page.locator("#nodes tbody tr").first().waitFor();
    expect(await page.locator("#nodes tbody tr").count()).toBe(3);
    expect(await page.locator('tr[data-node="node-a"]').innerText()).toMatch(/host-node-a\s+healthy\s+1 \/ 4\s+4096 MiB\s+7/);
    // Memory caps: node-a's 4096 MiB, none on node-c, none on node-b (whose heartbeat predates the field).
    const cap = (id: string) => page.locator(`tr[data-node="${id}"] td[data-memory-cap]`).innerText();
    expect([await cap("node-a"), await cap("node-b"), await cap("node-c")]).toEqual(["4096 MiB", "no cap", "no cap"]);
    expect(await page.locator("#nodes thead").innerText()).toContain("memory cap");
    expect(await page.locator('tr[data-node="node-c"]').getAttribute("data-state")).toBe("cooling");
    const count = (k: string) => page.locator(`#jobs tr[data-count="${k}"] td`).innerText();
    expect([await count("waiting"), await count("running"), await count("failed"), await count("delayed")]).toEqual(["3", "1", "1", "1"]);
    expect(await page.locator("#failed").innerText()).toContain("sandbox_start_failed");
    await fitsWidth();
    await shot("cluster");
    // node-b's heartbeat expires: the open page shows it lost on its own (polling), without reload.
    await expect.poll(() => page.locator('tr[data-node="node-b"]').getAttribute("data-state"), { timeout: SHORT_TTL_MS + 6000 }).toBe("lost");
    expect(await page.locator('tr[data-node="node-b"]').innerText()).toContain("lost");
    expect(problems).toEqual([]);
  }, 30_000);

  it("scripts/report-png.mjs: the named sections of a report, side by side in one PNG; a missing id is named", () => {
    const dir = join(root, "runs", "finished-run");
    writeReport(dir);
    const out = join(root, "figure.png");
    const r = spawnSync(process.execPath, [join(repo, "scripts", "report-png.mjs"), dir, out, "evaluations,reward,kl-mismatch,no-such-chart"], { encoding: "utf8", env: { ...process.env, HARNESSRL_CHROMIUM: CHROMIUM }, timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("(3 charts)");
    expect(r.stderr).toContain("not in this report: no-such-chart");
    const png = readFileSync(out);
    expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
    // IHDR: width and height, big-endian, at bytes 16 and 20. Two columns of charts, two rows.
    const [width, height] = [png.readUInt32BE(16), png.readUInt32BE(20)];
    expect(width).toBeGreaterThan(1000);
    expect(height).toBeGreaterThan(400);
    const usage = spawnSync(process.execPath, [join(repo, "scripts", "report-png.mjs"), join(root, "runs", "no-such-run")], { encoding: "utf8" });
    expect(usage.status).toBe(2);
  }, 90_000);

  it("report.html opened from file://: self-contained, charts drawn by the dashboard's chart code, no console errors", async () => {
    const dir = join(root, "runs", "finished-run");
    const written = writeReport(dir);
    // Leave the previous page first: its polling (e.g. /api/cluster) must not count as a request of the report's.
    await page.goto("about:blank");
    const requests: string[] = [];
    const onRequest = (r: { url(): string }): void => {
      if (!r.url().startsWith("file://")) requests.push(r.url());
    };
    page.on("request", onRequest);
    await page.goto(pathToFileURL(written.path).href);
    await page.locator("[data-chart] canvas").first().waitFor();
    const charts = await page.locator("[data-chart]").count();
    expect(charts).toBe(written.groups);
    expect(charts).toBeGreaterThanOrEqual(10);
    expect(await page.locator("[data-chart] canvas").count()).toBe(charts);
    for (const i of [0, 1, 2]) expect(await page.locator(`[data-chart="${i}"]`).getAttribute("data-points")).toBe("6");
    // Every canvas has ink on it: curves, not just an empty frame (uPlot draws axes on separate DOM, series on the canvas).
    type Canvas = { width: number; height: number; getContext(kind: "2d"): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } } };
    const inked = await page.locator("[data-chart] canvas").evaluateAll((els) =>
      els.map((c) => {
        const canvas = c as unknown as Canvas;
        const px = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 3; i < px.length; i += 4) if (px[i]! > 0) n++;
        return n;
      }),
    );
    expect(inked.length).toBe(charts);
    for (const n of inked) expect(n).toBeGreaterThan(100);
    page.off("request", onRequest);
    expect(requests).toEqual([]);
    await fitsWidth();
    await shot("report");
    // Served by the dashboard too, under the report's own CSP (its inline scripts allowed by hash).
    await page.goto(`${dash.url}report/finished-run`);
    await page.locator("[data-chart] canvas").first().waitFor();
    expect(await page.locator("[data-chart] canvas").count()).toBe(charts);
    expect(problems).toEqual([]);
  }, 30_000);
});
