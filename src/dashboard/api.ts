import type { CallSummaryQuery } from "../store/call-summaries.js";
import type { RunCatalog } from "./catalog.js";
import { chartsOfRows, compareChart, metricNames } from "./chart-data.js";
import type { RolloutQuery } from "./rollout-index.js";
import { rolloutDetail } from "./rollout-view.js";

/** A JSON answer: status and body. */
export interface ApiAnswer {
  status: number;
  body: unknown;
}

const notFound = (what: string): ApiAnswer => ({ status: 404, body: { error: `${what} not found` } });

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === "" || !/^\d{1,9}$/.test(v)) return undefined;
  return Number(v);
}

function strParam(q: URLSearchParams, name: string): string | undefined {
  const v = q.get(name);
  return v === null || v === "" ? undefined : v.slice(0, 300);
}

/**
 * The JSON API under /api/: runs, one run (charts, evaluations), its rollouts and calls tables (filtered and paged
 * here, not in the browser), one rollout, and a chart comparing runs. `parts` are the decoded path segments after
 * `/api/`.
 */
export function answer(catalog: RunCatalog, parts: string[], q: URLSearchParams): ApiAnswer {
  const [head, id, sub, rest, ...more] = parts;
  if (head === "runs" && id === undefined) {
    const runs = catalog.scan();
    for (const r of runs) r.poll();
    return { status: 200, body: runs.map((r) => r.summary()) };
  }
  if (head === "compare" && id === undefined) {
    const metric = strParam(q, "metric");
    const ids = (q.get("runs") ?? "").split(",").filter(Boolean).slice(0, 12);
    if (metric === undefined) return { status: 400, body: { error: "compare needs ?metric=" } };
    const runs = ids.map((i) => catalog.get(i)).filter((r) => r !== null);
    for (const r of runs) r.poll();
    return { status: 200, body: compareChart(metric, runs.map((r) => ({ id: r.id, rows: r.metrics }))) };
  }
  if (head !== "runs" || id === undefined || more.length > 0) return notFound("API path");
  const run = catalog.get(id);
  if (!run) return notFound(`run ${id}`);
  run.poll();
  if (sub === undefined) {
    return {
      status: 200,
      body: {
        summary: run.summary(),
        ...run.derived("charts", () => ({ charts: chartsOfRows(run.metrics), metricNames: metricNames(run.metrics) })),
        evalBefore: run.json("eval-before.json"),
        evalAfter: run.json("eval-after.json") ?? run.json("eval.json"),
        hasReport: run.reportPath() !== null,
      },
    };
  }
  if (sub === "rollouts" && rest === undefined) {
    const query: RolloutQuery = {};
    const step = intParam(q, "step");
    if (step !== undefined) query.step = step;
    for (const k of ["harness", "task", "family", "status"] as const) {
      const v = strParam(q, k);
      if (v !== undefined) query[k] = v;
    }
    const sort = q.get("sort");
    if (sort === "reward" || sort === "-reward" || sort === "order" || sort === "-order") query.sort = sort;
    const offset = intParam(q, "offset");
    const limit = intParam(q, "limit");
    if (offset !== undefined) query.offset = offset;
    if (limit !== undefined) query.limit = limit;
    return { status: 200, body: run.rollouts.query(query) };
  }
  if (sub === "rollouts" && rest !== undefined) {
    const detail = rolloutDetail(run, rest);
    return detail ? { status: 200, body: detail } : notFound(`rollout ${rest}`);
  }
  if (sub === "calls" && rest === undefined) {
    const store = run.openStore();
    if (!store) return { status: 200, body: { total: 0, rows: [], more: false } };
    const query: CallSummaryQuery = {};
    const harness = strParam(q, "harness");
    const status = q.get("status");
    const rollout = strParam(q, "rollout");
    const step = intParam(q, "step");
    if (harness !== undefined) query.harness = harness;
    if (status === "ok" || status === "error") query.status = status;
    if (rollout !== undefined) query.rolloutId = rollout;
    if (step !== undefined) query.rolloutPrefix = `s${step}-`;
    if (q.get("order") === "oldest") query.order = "oldest";
    const before = intParam(q, "before");
    const after = intParam(q, "after");
    if (before !== undefined) query.beforeSeq = before;
    if (after !== undefined) query.afterSeq = after;
    const offset = intParam(q, "offset");
    const limit = intParam(q, "limit");
    if (offset !== undefined) query.offset = offset;
    if (limit !== undefined) query.limit = limit;
    return { status: 200, body: store.callSummaries(query) };
  }
  return notFound("API path");
}
