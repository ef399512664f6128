import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { chartClient, cleanPoints, groupSeries, parseMetrics, writeReport } from "../../src/report/index.js";

const VOID = new Set(["meta", "br", "hr", "img", "input", "link"]);

/** Checks that every element is closed in order (a malformed page or an unescaped `<` in a value breaks this). */
function expectBalanced(html: string): void {
  const stack: string[] = [];
  // Inline CSS and scripts are not markup (the minified uPlot compares with `<`).
  html = html.replace(/<style>[\s\S]*?<\/style>/g, "<style></style>").replace(/(<script\b[^>]*>)[\s\S]*?<\/script>/g, "$1</script>");
  const tags = html.replace(/<!DOCTYPE html>/i, "").matchAll(/<(\/?)([a-zA-Z][a-zA-Z0-9]*)\b[^>]*?(\/?)>/g);
  for (const m of tags) {
    const [, close, name, self] = m as unknown as [string, string, string, string];
    const tag = name.toLowerCase();
    if (self === "/" || VOID.has(tag)) continue;
    if (close) expect(stack.pop(), `closing </${tag}>`).toBe(tag);
    else stack.push(tag);
  }
  expect(stack).toEqual([]);
  // Outside tags, no raw `<` or `>` may remain (they would have been data that escaped nothing).
  const text = html.replace(/<[^>]*>/g, "");
  expect(text).not.toMatch(/[<>]/);
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function runDir(lines: string[], extra: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "harnessrl-report-"));
  dirs.push(dir);
  writeFileSync(join(dir, "metrics.jsonl"), lines.join("\n"));
  for (const [name, text] of Object.entries(extra)) writeFileSync(join(dir, name), text);
  return dir;
}

function syntheticMetrics(steps: number): string[] {
  const lines: string[] = [];
  for (let s = 1; s <= steps; s++) {
    lines.push(
      JSON.stringify({
        step: s,
        policy_version: s,
        phase: "train",
        "reward/mean": 0.2 + s * 0.05,
        "reward/std": 0.3,
        "pass1/codex": s / (steps + 1),
        "pass1/<qwen&co>": 0.1,
        kl: 0.001 * s,
        "mismatch/mean_abs": 0.01,
        "mismatch/max_abs": 0.2 + 0.01 * s,
        clip_frac: 0.05,
        entropy: 1.5 - 0.02 * s,
        tokens_per_s: 400 + s,
        rollouts_per_s: 0.5,
        loss: -0.01 * s,
        grad_norm: 1 / s,
        "adv/learnability": 0.4,
        bandit: { prob: { codex: 0.6, pi: 0.4 } },
        eval: s % 2 === 0 ? { pass1: { codex: 0.3 } } : undefined,
      }),
    );
  }
  return lines;
}

describe("run report", () => {
  it("writes one self-contained page with one chart per metric group (drawn by the dashboard's chart code, inlined), the latest values, summary and config, all escaped", () => {
    const dir = runDir([...syntheticMetrics(12), '{"step": 13, "reward/me'], { "config.yaml": "run: demo\nnote: <b>&</b>\n", "summary.json": JSON.stringify({ pass1: { before: 0.25, after: 0.5 }, label: "<x>" }) });
    const r = writeReport(dir, { now: new Date("2026-11-29T20:00:00Z") });
    expect(r).toMatchObject({ path: join(dir, "report.html"), steps: 12, skippedLines: 1 });
    const html = readFileSync(r.path, "utf8");
    expectBalanced(html);
    // Groups: reward, pass1, kl-mismatch, clip, entropy, tokens/s, other throughput, loss, grad-norm, adv, bandit/prob,
    // eval/pass1 (policy_version is bookkeeping, not a curve: the dashboard does not chart it either).
    const titles = [...html.matchAll(/<h2>([^<]*)<\/h2>/g)].map((m) => m[1]);
    expect(titles).toEqual(["Summary", "Reward", "pass@1 per harness", "KL / train–inference mismatch", "Clipping", "Entropy", "Throughput (tokens/s)", "Throughput", "Loss", "Gradient norm", "adv", "bandit/prob", "eval/pass1", "Latest values", "Config"]);
    expect(r.groups).toBe(12);
    expect(html.match(/<div data-chart="\d+"><\/div>/g)?.length).toBe(12);
    // The charts are drawn by the dashboard's own chart module and uPlot, both inlined as they are on disk.
    const client = chartClient();
    expect(html).toContain(`<script>${client.uplotJs}</script>`);
    expect(html).toContain(client.chartsJs);
    expect(html).toContain(client.uplotCss);
    // Series names and text are escaped everywhere (the embedded data too); nothing is fetched.
    expect(html).toContain("pass1/&lt;qwen&amp;co&gt;");
    expect(html).not.toContain("<qwen");
    expect(html.replace(/(<script\b[^>]*>)[\s\S]*?<\/script>/g, "$1</script>")).not.toMatch(/<\/?b>/);
    expect(html).toContain("pass1/\\u003cqwen&co>");
    expect(html).toContain("note: &lt;b&gt;&amp;&lt;/b&gt;");
    expect(html).toContain("<td>label</td><td class=\"num\">&lt;x&gt;</td>");
    expect(html).not.toMatch(/<script[^>]*\ssrc=|<link\b|<img\b|@import|url\(\s*["']?https?:/);
    expect(html).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; script-src &#39;sha256-/);
    // Latest values: the last finite value per series, eval's from step 12.
    expect(html).toContain('<tr><td>reward/mean</td><td class="num">12</td><td class="num">0.8</td></tr>');
    expect(html).toContain('<tr><td>eval/pass1/codex</td><td class="num">12</td><td class="num">0.3</td></tr>');
    // The reward chart's embedded data: both series over the 12 steps, aligned as uPlot wants them.
    const charts = JSON.parse(/<script type="application\/json" id="report-charts">([\s\S]*?)<\/script>/.exec(html)![1]!) as { id: string; names: string[]; x: number[]; ys: number[][] }[];
    const reward = charts.find((c) => c.id === "reward")!;
    expect(reward.names).toEqual(["reward/mean", "reward/std"]);
    expect(reward.x).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(reward.ys[0]![11]).toBeCloseTo(0.8);
  });

  it("a warm-started run in progress: the SFT curve is charted over optimizer steps, the warm start's summary row and the finished evaluations are tables, not one-dot charts", () => {
    // The reproduction probability starts once every demonstration has been through a step (here: step 2).
    const sft = [1, 2, 3].map((k) => JSON.stringify({ phase: "sft", optimizer_step: k, epoch: 1, "sft/nll": 3 / k, "sft/nll_epoch_mean": 2, "sft/lr": 0.01, ...(k > 1 ? { "sft/demo_prob": k / 10, "sft/demo_opening_prob": 0.5 + k / 10 } : {}) }));
    const warm = JSON.stringify({ phase: "warm_start", step: 0, policy_version: 1, demos: 60, plannedSteps: 360, steps: 3, timeCapped: false, finalNll: 1, demoMs: 1_199_672 });
    const group = (pass: number): object => ({ rollouts: 160, passAt1: pass, passAt1Stderr: 0.031, groupRates: { "t/openclaw": 1 } });
    // eval-before finished; an eval-after.json that is not an evaluation (torn, or written by something else) is left out.
    const dir = runDir([...sft, warm, ...syntheticMetrics(2)], { "eval-before.json": JSON.stringify({ k: 1, overall: group(0.1875), byHarness: { "open<claw>": group(0.1875) } }), "eval-after.json": '{"overall": {"passAt1": "high"}}' });
    const r = writeReport(dir, { now: new Date("2026-12-04T16:00:00Z") });
    expect(r.steps).toBe(2);
    const html = readFileSync(r.path, "utf8");
    expectBalanced(html);
    expect(html).toContain("2 logged steps · 3 warm-start SFT steps");
    const titles = [...html.matchAll(/<h2>([^<]*)<\/h2>/g)].map((m) => m[1]);
    expect(titles).toContain("Warm start");
    expect(html).toContain('<thead><tr><th>evaluation</th><th>rollouts</th><th>pass@1</th><th>open&lt;claw&gt;</th></tr></thead><tbody><tr><td>eval-before</td><td class="num">160</td><td class="num">18.8 % ± 3.1</td><td class="num">18.8 %</td></tr></tbody>');
    expect(titles).toContain("Warm start: SFT NLL per token");
    expect(titles).toContain("Warm start: learning rate");
    for (const name of ["demos", "plannedSteps", "steps", "timeCapped", "finalNll", "demoMs", "epoch"]) expect(titles).not.toContain(name);
    expect(html).toContain('<tr><td>demoMs</td><td class="num">1200 s</td></tr>');
    expect(html).toContain('<tr><td>plannedSteps</td><td class="num">360</td></tr>');
    const charts = JSON.parse(/<script type="application\/json" id="report-charts">([\s\S]*?)<\/script>/.exec(html)![1]!) as { id: string; names: string[]; x: number[]; ys: number[][] }[];
    const nll = charts.find((c) => c.id === "sft-nll")!;
    expect(nll.names).toEqual(["sft/nll", "sft/nll_epoch_mean"]);
    expect(nll.x).toEqual([1, 2, 3]);
    expect(nll.ys[0]).toEqual([3, 1.5, 1]);
    expect(titles).toContain("Warm start: probability of reproducing a demonstration, and of opening its calls as it did");
    const prob = charts.find((c) => c.id === "sft-demo-prob")!;
    expect(prob.names).toEqual(["sft/demo_prob", "sft/demo_opening_prob"]);
    expect(prob.x).toEqual([2, 3]);
    expect(prob.ys[0]).toEqual([0.2, 0.3]);
    expect(prob.ys[1]).toEqual([0.7, 0.8]);
    // The RL charts start at step 1: the summary row (step 0) adds no point to them.
    expect(charts.find((c) => c.id === "reward")!.x).toEqual([1, 2]);
    const m = parseMetrics(readFileSync(join(dir, "metrics.jsonl"), "utf8"));
    expect(m.summaries).toEqual([{ phase: "warm_start", values: [["policy_version", 1], ["demos", 60], ["plannedSteps", 360], ["steps", 3], ["timeCapped", 0], ["finalNll", 1], ["demoMs", 1_199_672]] }]);
    expect(m.series.map((s) => s.name)).not.toContain("demos");
  });

  it("tolerates a missing metrics file and rejects a missing run directory", () => {
    const dir = mkdtempSync(join(tmpdir(), "harnessrl-report-"));
    dirs.push(dir);
    const r = writeReport(dir);
    expect(r.groups).toBe(0);
    const html = readFileSync(r.path, "utf8");
    expectBalanced(html);
    expect(html).toContain("No numeric metrics logged yet.");
    expect(html).toContain("No config.yaml");
    expect(() => writeReport(join(dir, "nope"))).toThrow(UserError);
  });

  it("parses tolerantly: nested objects flatten, booleans count, strings and arrays are ignored, x falls back to the line index", () => {
    const m = parseMetrics('{"a": 1, "b": {"c": 2}, "ok": true, "s": "x", "arr": [1]}\n[1, 2]\nnot json\n{"a": 3}\n');
    expect(m.skippedLines).toBe(2);
    expect(m.series.map((s) => [s.name, s.points])).toEqual([
      ["a", [[0, 1], [1, 3]]],
      ["b/c", [[0, 2]]],
      ["ok", [[0, 1]]],
    ]);
  });

  it("a resumed run that re-logs a step keeps the last value", () => {
    expect(cleanPoints([[1, 1], [2, 5], [2, 6], [3, Number.NaN]])).toEqual([[1, 1], [2, 6]]);
  });

  it("groups unknown names by their prefix without the last segment", () => {
    const g = groupSeries(["x/a/b", "x/a/c", "solo", "reward/mean", "x/d"].map((name) => ({ name, points: [[0, 1]] })));
    expect(g.map((x) => [x.title, x.series.map((s) => s.name)])).toEqual([
      ["Reward", ["reward/mean"]],
      ["solo", ["solo"]],
      ["x", ["x/d"]],
      ["x/a", ["x/a/b", "x/a/c"]],
    ]);
  });

  it("harnessrl report RUN_DIR writes the page from the command line", () => {
    const dir = runDir(syntheticMetrics(3));
    const out = execFileSync(process.execPath, ["dist/cli/main.js", "report", dir], { encoding: "utf8" });
    expect(out).toMatch(/wrote .*report\.html: 3 steps/);
    expect(readFileSync(join(dir, "report.html"), "utf8")).toContain('<div data-chart="0">');
  });
});
