// The runs list, a run's page, and its rollouts and calls tables (filtered and paged by the server).
import { api, duration, fmt, h, link, pct, put } from "./app.js";
import { lineChart } from "./charts.js";

const runHref = (run) => `#/run/${encodeURIComponent(run)}`;
const badge = (text) => h("span", { class: `badge ${text}` }, text);
/** An evaluation in progress (its journal): `eval-before 91/160, pass@1 so far 23.4 %`. */
const evaluating = (e) => (e ? h("span", { class: "muted evaluating" }, `${e.label} ${e.done}/${e.total}, pass@1 so far ${pct(e.passAt1)}`) : "");
/**
 * The other long work a running run reports (progress.json): `sft 60/127 epoch 2/6 nll 0.31`, `step 5 rollouts 12/24
 * reward so far 0.333`, `train 4/10`. The evaluation in progress is `evaluating`'s, with its pass@1 so far.
 */
const inProgress = (r) =>
  (r.progress ?? []).filter((p) => p.label !== r.evaluating?.label).flatMap((p) => [" ", h("span", { class: "muted in-progress" }, `${p.label} ${p.done}/${p.total}${p.detail ? ` ${p.detail}` : ""}`)]);

/** Runs: status, step, version, before/after pass@1, wall time; tick two or more to compare one metric on one chart. */
export async function runsPage(main) {
  let runs = await api("/api/runs");
  const chosen = new Set(runs.slice(0, 2).map((r) => r.id));
  const body = h("tbody");
  const metric = h("input", { id: "compare-metric", value: "reward/mean", list: "metric-names", size: 28 });
  const names = h("datalist", { id: "metric-names" });
  const chartEl = h("div", { class: "chart", id: "compare-chart" });
  let chart = null;

  const rows = () =>
    body.replaceChildren(
      ...runs.map((r) =>
        h(
          "tr",
          { "data-run": r.id },
          h("td", {}, h("input", { type: "checkbox", checked: chosen.has(r.id), "aria-label": `compare ${r.id}`, onchange: (e) => (e.target.checked ? chosen.add(r.id) : chosen.delete(r.id), compare()) })),
          h("td", {}, link(runHref(r.id), r.id)),
          h("td", {}, badge(r.status), r.evaluating ? " " : "", evaluating(r.evaluating), inProgress(r)),
          h("td", { class: "num" }, r.plannedSteps ? `${fmt(r.step)} / ${r.plannedSteps}` : fmt(r.step)),
          h("td", { class: "num" }, fmt(r.policyVersion)),
          h("td", { class: "num" }, pct(r.passBefore)),
          h("td", { class: "num" }, pct(r.passAfter)),
          h("td", { class: "num" }, duration(r.wallSeconds)),
          h("td", { class: "num" }, fmt(r.rollouts)),
        ),
      ),
    );

  async function compare() {
    const ids = [...chosen];
    if (ids.length === 0) return;
    const data = await api(`/api/compare?runs=${ids.map(encodeURIComponent).join(",")}&metric=${encodeURIComponent(metric.value)}`);
    if (chart) chart.update(data);
    else chart = lineChart(chartEl, data);
  }

  rows();
  put(main,
    h("h1", {}, "Runs"),
    runs.length === 0 ? h("p", { class: "muted" }, "No run directories here yet.") : null,
    h("table", { class: "runs" }, h("thead", {}, h("tr", {}, ...["compare", "run", "status", "step", "policy", "pass@1 before", "pass@1 after", "wall", "rollouts"].map((t) => h("th", {}, t)))), body),
    h("h2", {}, "Compare runs"),
    h("div", { class: "bar" }, h("label", { for: "compare-metric" }, "metric"), metric, names, h("button", { onclick: compare }, "show")),
    h("div", { class: "card" }, chartEl),
  );
  if (runs[0]) api(`${"/api/runs/"}${encodeURIComponent(runs[0].id)}`).then((d) => names.replaceChildren(...d.metricNames.map((n) => h("option", { value: n }))));
  await compare();
  return {
    async onLive() {
      runs = await api("/api/runs");
      rows();
      await compare();
    },
    dispose: () => chart?.destroy(),
  };
}

function evalTable(title, before, after, key) {
  const names = [...new Set([...Object.keys(before?.[key] ?? {}), ...Object.keys(after?.[key] ?? {})])].sort();
  if (names.length === 0) return null;
  return h(
    "div",
    { class: "card" },
    h("h3", {}, title),
    h(
      "table",
      {},
      h("thead", {}, h("tr", {}, h("th", {}, key === "byHarness" ? "harness" : "family"), h("th", {}, "before"), h("th", {}, "after"), h("th", {}, "Δ"))),
      h(
        "tbody",
        {},
        ...names.map((n) => {
          const b = before?.[key]?.[n]?.passAt1;
          const a = after?.[key]?.[n]?.passAt1;
          return h("tr", {}, h("td", {}, n), h("td", { class: "num" }, pct(b)), h("td", { class: "num" }, pct(a)), h("td", { class: "num" }, b !== undefined && a !== undefined ? `${(100 * (a - b)).toFixed(1)} pp` : "—"));
        }),
      ),
    ),
  );
}

/** A run: its summary, evaluations and every metric group as a chart, kept current by the event stream. */
export async function runPage(main, run) {
  let d = await api(`/api/runs/${encodeURIComponent(run)}`);
  const charts = new Map();
  const grid = h("div", { class: "grid", id: "charts" });
  const head = h("div", { class: "bar" });
  const renderHead = () => {
    const s = d.summary;
    head.replaceChildren();
    put(
      head,
      badge(s.status),
      evaluating(s.evaluating),
      inProgress(s).filter((x) => x !== " "),
      h("span", {}, `step ${fmt(s.step)}${s.plannedSteps ? ` / ${s.plannedSteps}` : ""}`),
      h("span", {}, `policy v${fmt(s.policyVersion)}`),
      h("span", {}, `pass@1 ${pct(s.passBefore)} → ${pct(s.passAfter)}`),
      h("span", {}, `wall ${duration(s.wallSeconds)}`),
      link(`${runHref(run)}/rollouts`, `${s.rollouts} rollouts`),
      link(`${runHref(run)}/calls`, "calls"),
      d.hasReport ? h("a", { href: `/report/${encodeURIComponent(run)}`, target: "_blank", rel: "noopener" }, "static report") : "",
    );
  };
  const renderCharts = () => {
    for (const c of d.charts) {
      const known = charts.get(c.id);
      if (known) known.update(c);
      else {
        const el = h("div", { class: "chart", "data-chart": c.id });
        grid.append(h("div", { class: "card" }, h("h3", {}, c.title), el));
        charts.set(c.id, lineChart(el, c));
      }
    }
  };
  const evals = h("div", { class: "grid" }, evalTable("Held-out pass@1 per harness", d.evalBefore, d.evalAfter, "byHarness"), evalTable("Held-out pass@1 per task family", d.evalBefore, d.evalAfter, "byFamily"));
  renderHead();
  put(main, h("h1", {}, run), head, d.evalBefore || d.evalAfter ? h("div", {}, h("h2", {}, "Evaluations"), evals) : null, h("h2", {}, "Curves"), d.charts.length ? grid : h("p", { class: "muted" }, "No metrics logged yet."));
  renderCharts();
  return {
    async onLive() {
      d = await api(`/api/runs/${encodeURIComponent(run)}`);
      renderHead();
      if (d.charts.length && !grid.isConnected) put(main, grid);
      renderCharts();
    },
    dispose: () => charts.forEach((c) => c.destroy()),
  };
}

/**
 * A server-paged table with filter menus: `columns` are [title, row → cell]; `filters` are [name, values or null for a
 * text box]. The filters and page live in the URL hash, so a view can be linked.
 */
async function pagedTable(main, { title, endpoint, hashBase, params, columns, filters, sorts, keyset }) {
  const limit = 50;
  const offset = Number(params.get("offset") ?? 0);
  const q = new URLSearchParams(params);
  q.set("limit", String(limit));
  const page = await api(`${endpoint}?${q}`);
  const go = (changes) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v === "" || v === null) next.delete(k);
      else next.set(k, String(v));
    }
    if (!("offset" in changes)) next.delete("offset");
    if (!("before" in changes) && !("after" in changes)) {
      next.delete("before");
      next.delete("after");
    }
    location.hash = `${hashBase}?${next}`;
  };
  const filterEls = filters(page).map(([name, values]) =>
    h(
      "label",
      {},
      `${name} `,
      values === null
        ? h("input", { name, value: params.get(name) ?? "", size: 14, onchange: (e) => go({ [name]: e.target.value }) })
        : h("select", { name, onchange: (e) => go({ [name]: e.target.value }) }, h("option", { value: "" }, "all"), ...values.map((v) => h("option", { value: v, selected: String(v) === params.get(name) }, String(v)))),
    ),
  );
  const sortEl = sorts ? h("label", {}, "sort ", h("select", { name: "sort", onchange: (e) => go({ sort: e.target.value }) }, ...sorts.map(([v, t]) => h("option", { value: v, selected: v === (params.get("sort") ?? sorts[0][0]) }, t)))) : null;
  let pager;
  if (keyset) {
    // Calls page by sequence number (newest first): O(page) at any depth of a 100k-call store.
    const rows = page.rows;
    const fromAfter = params.has("after");
    const newer = fromAfter ? page.more : params.has("before");
    const older = fromAfter ? true : page.more;
    const first = rows[0];
    const last = rows[rows.length - 1];
    pager = h(
      "div",
      { class: "pager" },
      h("button", { disabled: !newer || !first, onclick: () => go({ after: first.seq, before: "" }) }, "‹ newer"),
      h("span", { class: "muted" }, rows.length ? `calls ${first.seq}…${last.seq} (seq) · ${page.total === null ? "total not counted for this filter" : `${page.total} in all`}` : "no calls"),
      h("button", { disabled: !older || !last, onclick: () => go({ before: last.seq, after: "" }) }, "older ›"),
    );
  } else {
    const end = Math.min(page.total, offset + page.rows.length);
    pager = h("div", { class: "pager" }, h("button", { disabled: offset === 0, onclick: () => go({ offset: Math.max(0, offset - limit) }) }, "‹ prev"), h("span", { class: "muted" }, `${page.total ? offset + 1 : 0}–${end} of ${page.total}`), h("button", { disabled: end >= page.total, onclick: () => go({ offset: offset + limit }) }, "next ›"));
  }
  put(
    main,
    h("h1", {}, title),
    h("div", { class: "bar" }, ...filterEls, sortEl),
    pager,
    h("table", { class: "wide", id: "table" }, h("thead", {}, h("tr", {}, ...columns.map(([t]) => h("th", {}, t)))), h("tbody", {}, ...page.rows.map((r) => h("tr", {}, ...columns.map(([, cell]) => h("td", {}, cell(r))))))),
  );
  return page;
}

const rolloutHref = (run, id) => `${runHref(run)}/rollout/${encodeURIComponent(id)}`;

export async function rolloutsPage(main, run, params) {
  await pagedTable(main, {
    title: "Rollouts",
    endpoint: `/api/runs/${encodeURIComponent(run)}/rollouts`,
    hashBase: `${runHref(run)}/rollouts`,
    params,
    filters: (p) => [["step", p.facets.steps], ["harness", p.facets.harnesses], ["family", p.facets.families], ["status", p.facets.statuses], ["task", null]],
    sorts: [["-order", "newest"], ["order", "oldest"], ["-reward", "reward ↓"], ["reward", "reward ↑"]],
    columns: [
      ["rollout", (r) => link(rolloutHref(run, r.rolloutId), r.rolloutId)],
      ["step", (r) => fmt(r.step)],
      ["task", (r) => r.taskId],
      ["harness", (r) => r.harness],
      ["family", (r) => r.family],
      ["status", (r) => badge(r.status)],
      ["reward", (r) => fmt(r.score)],
      ["calls", (r) => fmt(r.calls)],
      ["time", (r) => (r.durationMs === null ? "—" : duration(r.durationMs / 1000))],
    ],
  });
  // New rollouts land at the top of the default order: refresh the first page when they arrive.
  return { onLive: (e) => (e.newRollouts.length && !params.get("offset") ? window.dispatchEvent(new HashChangeEvent("hashchange")) : undefined) };
}

export async function callsPage(main, run, params) {
  await pagedTable(main, {
    title: "Calls",
    endpoint: `/api/runs/${encodeURIComponent(run)}/calls`,
    hashBase: `${runHref(run)}/calls`,
    params,
    filters: () => [["harness", null], ["status", ["ok", "error"]], ["step", null], ["rollout", null]],
    sorts: null,
    keyset: true,
    columns: [
      ["seq", (r) => fmt(r.seq)],
      ["call", (r) => (r.rolloutId ? link(`${rolloutHref(run, r.rolloutId)}?call=${encodeURIComponent(r.callId)}`, r.callId) : r.callId)],
      ["rollout", (r) => r.rolloutId ?? "—"],
      ["harness", (r) => r.harness ?? "—"],
      ["role", (r) => r.agentRole ?? "—"],
      ["status", (r) => badge(r.status)],
      ["finish", (r) => r.finishReason ?? "—"],
      ["policy", (r) => fmt(r.policyVersion)],
      ["break", (r) => (r.breakKind ? h("span", { class: "badge brk" }, r.breakKind) : "")],
      ["prompt", (r) => fmt(r.promptTokens)],
      ["completion", (r) => fmt(r.completionTokens)],
    ],
  });
  return {};
}
