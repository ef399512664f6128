import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);

/**
 * The browser chart code shared by the dashboard and report.html: uPlot from its npm package (a dependency; nothing from
 * a CDN) and our own `static/charts.js` (an ES module drawing a {@link ChartData} with uPlot). The dashboard serves these
 * files; the report inlines them. The folder is found the same way from src/report/ and dist/report/ (the npm package
 * ships src/report/static; no build step copies it).
 */
export const CHART_CLIENT_FILES = {
  uplotJs: (): string => require.resolve("uplot/dist/uPlot.iife.min.js"),
  uplotCss: (): string => require.resolve("uplot/dist/uPlot.min.css"),
  chartsJs: (): string => fileURLToPath(new URL("../../src/report/static/charts.js", import.meta.url)),
};

export interface ChartClient {
  uplotJs: string;
  uplotCss: string;
  chartsJs: string;
}

let cached: ChartClient | null = null;

/** The three files' text (read once). */
export function chartClient(): ChartClient {
  cached ??= {
    uplotJs: readFileSync(CHART_CLIENT_FILES.uplotJs(), "utf8"),
    uplotCss: readFileSync(CHART_CLIENT_FILES.uplotCss(), "utf8"),
    chartsJs: readFileSync(CHART_CLIENT_FILES.chartsJs(), "utf8"),
  };
  return cached;
}

/** A CSP source for an inline script with exactly this text. */
export function scriptHash(text: string): string {
  return `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;
}
