#!/usr/bin/env node
// Screenshots chosen charts of a run's report.html into one PNG (the figures in docs/training.md), with Debian's
// chromium driven by playwright-core (a dev dependency; downloads nothing).
//   node scripts/report-png.mjs <run-dir or report.html> <out.png> [chart ids, comma-separated]
// Ids are the report's section ids (evaluations, pass1, reward, kl-mismatch, entropy, grad-norm, sft-nll, ...). Regenerate
// the report first (`harnessrl report <run-dir>`) when the run changed since it was written.
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const [target, out, ids = "pass1,reward,kl-mismatch,entropy"] = process.argv.slice(2);
if (!target || !out) {
  console.error("usage: node scripts/report-png.mjs <run-dir | report.html> <out.png> [chart ids]");
  process.exit(2);
}
const html = statSync(target).isDirectory() ? join(target, "report.html") : target;
if (!existsSync(html)) {
  console.error(`no report at ${html} (write one with: harnessrl report <run-dir>)`);
  process.exit(2);
}
const keep = ids.split(",").map((s) => s.trim()).filter(Boolean);
const browser = await chromium.launch({ executablePath: process.env.HARNESSRL_CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 });
  await page.goto(pathToFileURL(resolve(html)).href);
  // The charts draw once the page's scripts ran; a report without metrics has none.
  if ((await page.locator("[data-chart]").count()) > 0) await page.locator("[data-chart] canvas").first().waitFor();
  // The wanted sections (charts, the evaluations table), in the order asked for, alone in a grid of their own.
  const missing = await page.evaluate((wanted) => {
    const grid = document.createElement("div");
    grid.id = "png-grid";
    grid.style.cssText = "display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:12px;padding:12px;background:#fff";
    const found = wanted.map((id) => document.getElementById(id)).filter((el) => el !== null);
    for (const el of found) grid.appendChild(el);
    for (const child of [...document.body.children]) child.style.display = "none";
    document.body.appendChild(grid);
    return wanted.filter((id) => !document.getElementById(id));
  }, keep);
  if (missing.length) console.error(`not in this report: ${missing.join(", ")}`);
  // The charts draw on load and on resize; give them a frame after the layout changed.
  await page.evaluate(() => window.dispatchEvent(new Event("resize")));
  await page.waitForTimeout(500);
  await page.locator("#png-grid").screenshot({ path: out });
  console.log(`wrote ${out} (${keep.length - missing.length} charts)`);
} finally {
  await browser.close();
}
