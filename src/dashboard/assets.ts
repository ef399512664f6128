import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CHART_CLIENT_FILES } from "../report/chart-client.js";

export interface Asset {
  type: string;
  body: Buffer;
}

/**
 * The client's own files: plain browser JavaScript and CSS, served as written from src/dashboard/static (the package
 * ships that folder), found the same way from src/dashboard/ and dist/dashboard/; no build step copies them.
 */
const staticDir = (name: string): string => fileURLToPath(new URL(`../../src/dashboard/static/${name}`, import.meta.url));

/**
 * Every file the server sends that is not JSON: a fixed table of URL → file. Nothing else on disk is reachable; uPlot
 * comes from its npm package (a dependency), nothing from a CDN.
 */
const TABLE: Record<string, { file: () => string; type: string }> = {
  "/": { file: () => staticDir("index.html"), type: "text/html; charset=utf-8" },
  "/assets/app.js": { file: () => staticDir("app.js"), type: "text/javascript; charset=utf-8" },
  "/assets/pages.js": { file: () => staticDir("pages.js"), type: "text/javascript; charset=utf-8" },
  "/assets/rollout.js": { file: () => staticDir("rollout.js"), type: "text/javascript; charset=utf-8" },
  "/assets/cluster.js": { file: () => staticDir("cluster.js"), type: "text/javascript; charset=utf-8" },
  // The chart code report.html inlines too (src/report/static/charts.js), and uPlot from its npm package.
  "/assets/charts.js": { file: CHART_CLIENT_FILES.chartsJs, type: "text/javascript; charset=utf-8" },
  "/assets/app.css": { file: () => staticDir("app.css"), type: "text/css; charset=utf-8" },
  "/assets/uplot.js": { file: CHART_CLIENT_FILES.uplotJs, type: "text/javascript; charset=utf-8" },
  "/assets/uplot.css": { file: CHART_CLIENT_FILES.uplotCss, type: "text/css; charset=utf-8" },
};

const cache = new Map<string, Asset>();

/** The asset at `path`, or null when the table has none (read once, then served from memory). */
export function asset(path: string): Asset | null {
  const entry = TABLE[path];
  if (!entry) return null;
  let a = cache.get(path);
  if (!a) {
    a = { type: entry.type, body: readFileSync(entry.file()) };
    cache.set(path, a);
  }
  return a;
}
