// The dashboard's client: a hash router over the pages, one event stream for live updates. Data is put into the
// page with textContent only (never as HTML), so nothing a run recorded can run as script here.
import { clusterPage } from "./cluster.js";
import { rolloutPage } from "./rollout.js";
import { callsPage, rolloutsPage, runPage, runsPage } from "./pages.js";

/** An element: `h("td", { class: "num" }, "3")`. Attributes starting with "on" are listeners. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

/** Appends the children that are there (null, undefined and false stand for "nothing", not the text "null"). */
export function put(el, ...children) {
  el.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

export async function api(path) {
  const res = await fetch(path, { headers: { accept: "application/json" } });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** 4 significant digits, integers as they are, — for missing. */
export function fmt(v, digits = 4) {
  if (v === null || v === undefined || Number.isNaN(v)) return "—";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
  return String(Number(v.toPrecision(digits)));
}

export function pct(v) {
  return v === null || v === undefined ? "—" : `${(100 * v).toFixed(1)}%`;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const s = Math.round(seconds);
  return s >= 3600 ? `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m` : s >= 60 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${s}s`;
}

export function link(href, text) {
  return h("a", { href }, text);
}

function crumbs(parts) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...parts.flatMap(([href, text], i) => [i > 0 ? h("span", {}, "›") : null, href ? link(href, text) : h("span", {}, text)]).filter(Boolean));
}

let stream = null;
let page = null;

/** One event stream for the page shown (`run` = its run id, or null for all runs); events go to the page's onLive. */
function listen(run) {
  stream?.close();
  const dot = document.getElementById("live");
  stream = new EventSource(run ? `/api/events?run=${encodeURIComponent(run)}` : "/api/events");
  stream.onopen = () => dot.classList.add("on");
  stream.onerror = () => dot.classList.remove("on");
  stream.addEventListener("run", (e) => {
    const data = JSON.parse(e.data);
    if (page?.onLive) page.onLive(data);
  });
}

async function route() {
  const main = document.getElementById("main");
  page?.dispose?.();
  page = null;
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query);
  main.replaceChildren();
  try {
    if (parts[0] === "run" && parts[1]) {
      const run = parts[1];
      const base = [["#/", "runs"], [`#/run/${encodeURIComponent(run)}`, run]];
      listen(run);
      if (parts[2] === "rollouts") {
        crumbs([...base, [null, "rollouts"]]);
        page = await rolloutsPage(main, run, params);
      } else if (parts[2] === "calls") {
        crumbs([...base, [null, "calls"]]);
        page = await callsPage(main, run, params);
      } else if (parts[2] === "rollout" && parts[3]) {
        crumbs([...base, [`#/run/${encodeURIComponent(run)}/rollouts`, "rollouts"], [null, parts[3]]]);
        page = await rolloutPage(main, run, parts[3], params);
      } else {
        crumbs(base);
        page = await runPage(main, run);
      }
    } else if (parts[0] === "cluster") {
      crumbs([["#/", "runs"], [null, "cluster"]]);
      stream?.close();
      stream = null;
      page = await clusterPage(main);
    } else {
      crumbs([["#/", "runs"]]);
      listen(null);
      page = await runsPage(main);
    }
  } catch (e) {
    main.replaceChildren(h("p", { class: "error" }, `could not load this page: ${e.message}`));
  }
}

/** The cluster link shows only when the server was given a cluster (harnessrl dashboard --cluster). */
async function navigation() {
  const config = await api("/api/config").catch(() => ({ cluster: false }));
  document.getElementById("cluster-link").hidden = !config.cluster;
}

window.addEventListener("hashchange", route);
navigation();
route();
