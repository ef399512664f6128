// The cluster page: rollout nodes (capacity, running, health, memory cap from their heartbeats) and the rollout queue's jobs,
// read from the cluster's Redis by the server. Polled every 1.5 s (the state lives in Redis, not in run files the
// event stream watches).
import { api, fmt, h, put } from "./app.js";

const POLL_MS = 1500;

function ago(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? `${s}s ago` : s < 3600 ? `${Math.floor(s / 60)}m ago` : `${Math.floor(s / 3600)}h ago`;
}

const stateBadge = (state) => h("span", { class: `badge node-${state}` }, state === "up" ? "healthy" : state === "cooling" ? "cooling down" : "lost");

// A job asking more sandbox memory than a node's --max-memory-mb fails on that node for good (docs/cluster.md).
const memoryCap = (mb) => (typeof mb === "number" ? `${fmt(mb)} MiB` : "no cap");

function nodesTable(snap) {
  if (snap.nodes.length === 0) return h("p", { class: "muted", id: "no-nodes" }, "No rollout node has a heartbeat in this Redis (start one with harnessrl node).");
  return h(
    "table",
    { id: "nodes" },
    h("thead", {}, h("tr", {}, ...["node", "host", "health", "running / capacity", "memory cap", "completed", "spooled", "last heartbeat", "up since"].map((t) => h("th", {}, t)))),
    h(
      "tbody",
      {},
      ...snap.nodes.map((n) =>
        h(
          "tr",
          { "data-node": n.nodeId, "data-state": n.state },
          h("td", {}, n.nodeId),
          h("td", {}, n.host || "—"),
          h("td", {}, stateBadge(n.state)),
          h("td", { class: "num" }, `${fmt(n.running)} / ${fmt(n.capacity)}`),
          h("td", { class: "num", "data-memory-cap": n.maxMemoryMb ?? "none" }, memoryCap(n.maxMemoryMb)),
          h("td", { class: "num" }, fmt(n.completed)),
          h("td", { class: "num" }, fmt(n.spooled)),
          h("td", { class: "num" }, ago(snap.at - n.lastSeenAt)),
          h("td", { class: "num" }, ago(snap.at - n.startedAt)),
        ),
      ),
    ),
  );
}

function jobsTable(snap) {
  const j = snap.jobs;
  const cap = snap.nodes.filter((n) => n.healthy).reduce((a, n) => a + n.capacity, 0);
  const cells = [["waiting", j.waiting], ["running", j.running], ["delayed (retry backoff)", j.delayed], ["failed", j.failed], ["completed (kept 7 days)", j.completed], ["healthy capacity", cap]];
  return h("table", { id: "jobs" }, h("tbody", {}, ...cells.map(([k, v]) => h("tr", { "data-count": k.split(" ")[0] }, h("th", {}, k), h("td", { class: "num" }, fmt(v))))));
}

function failedTable(snap) {
  if (snap.failed.length === 0) return h("p", { class: "muted" }, "No failed jobs.");
  return h(
    "table",
    { id: "failed", class: "wide" },
    h("thead", {}, h("tr", {}, ...["job", "attempts", "failed", "reason"].map((t) => h("th", {}, t)))),
    h("tbody", {}, ...snap.failed.map((f) => h("tr", {}, h("td", {}, f.id), h("td", { class: "num" }, fmt(f.attempts)), h("td", { class: "num" }, f.failedAt ? ago(snap.at - f.failedAt) : "—"), h("td", {}, h("pre", {}, f.reason))))),
  );
}

export async function clusterPage(main) {
  const body = h("div", { id: "cluster" });
  const status = h("p", { class: "muted", id: "cluster-status" });
  put(main, h("h1", {}, "Cluster"), status, body);
  let timer = null;
  let stopped = false;
  async function refresh() {
    try {
      const snap = await api("/api/cluster");
      status.textContent = `queue ${snap.queue} · ${snap.nodes.filter((n) => n.healthy).length} of ${snap.nodes.length} node(s) healthy · updated ${new Date(snap.at).toLocaleTimeString()}`;
      status.className = "muted";
      body.replaceChildren(h("h2", {}, "Nodes"), nodesTable(snap), h("h2", {}, "Jobs"), jobsTable(snap), h("h2", {}, "Recent failures"), failedTable(snap));
    } catch (e) {
      status.textContent = `cluster unreachable: ${e.message}`;
      status.className = "error";
    }
    if (!stopped) timer = setTimeout(refresh, POLL_MS);
  }
  await refresh();
  return {
    dispose() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
