// One rollout: result and verifier, the GRPO group's prefix tree, its sessions (sub-agents under the call that spawned
// them) with each call's conversation, history breaks, and a token view coloured by advantage.
import { api, fmt, h, link, put } from "./app.js";

const badge = (text, cls = text) => h("span", { class: `badge ${cls}` }, text);

/** Background for a token: green for positive advantage, red for negative, stronger with |advantage| (capped at 2). */
function tint(adv) {
  const a = Math.min(1, Math.abs(adv) / 2) * 0.55 + 0.08;
  return adv >= 0 ? `rgba(44,160,44,${a.toFixed(2)})` : `rgba(214,39,40,${a.toFixed(2)})`;
}

function content(c) {
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map((p) => (typeof p === "string" ? p : (p.text ?? JSON.stringify(p)))).join("\n");
  return c === null || c === undefined ? "" : JSON.stringify(c, null, 1);
}

function message(m, cls = m.role) {
  const calls = (m.toolCalls ?? []).map((tc) => h("pre", { class: "toolcall" }, `→ ${tc.name}(${tc.arguments})`));
  const text = content(m.content);
  return h("div", { class: `msg ${cls}` }, h("span", { class: "role" }, m.role === "tool" ? `tool output${m.toolCallId ? ` (${m.toolCallId})` : ""}` : m.role), text ? text : null, ...calls);
}

/** The conversation as the harness sent it: system prompt and tool list collapsed, then the turns, then the answer. */
function conversation(call) {
  const system = call.messages.filter((m) => m.role === "system");
  const rest = call.messages.filter((m) => m.role !== "system");
  return h(
    "div",
    { class: "transcript" },
    system.length ? h("details", {}, h("summary", {}, `system prompt (${system.reduce((n, m) => n + content(m.content).length, 0)} chars)`), ...system.map((m) => message(m))) : null,
    call.tools.length ? h("details", {}, h("summary", {}, `tools: ${call.tools.map((t) => t.name).join(", ")}`), h("pre", {}, JSON.stringify(call.tools, null, 1))) : null,
    ...rest.map((m) => message(m)),
    call.response ? message(call.response, "response") : null,
    call.error ? h("pre", { class: "error" }, `${call.error.code}: ${call.error.message}`) : null,
  );
}

function tokenView(call) {
  const t = call.tokens;
  const spans = t.ids.map((id, i) => {
    const ignored = t.ignored[i] === 1;
    const text = t.text ? t.text[i] : `${id} `;
    return h("span", { class: ignored ? "ign" : "tok", style: ignored ? null : `background:${tint(t.advantage)}`, title: `id ${id} · logprob ${t.logprobs[i]}${ignored ? " · ignored by the loss" : ` · advantage ${fmt(t.advantage)}`}` }, text);
  });
  return h(
    "details",
    { class: "tokenview", open: true },
    h("summary", {}, `completion tokens: ${t.ids.length}${t.truncated ? " (first shown)" : ""} · advantage ${fmt(t.advantage)} · ${t.ignored.filter((x) => x === 1).length} ignored by the loss`),
    h("div", { class: "tokens" }, ...spans),
  );
}

function callCard(call, view) {
  const brk = call.break;
  return h(
    "div",
    { class: "call card", id: call.callId },
    h(
      "h3",
      {},
      call.callId,
      " ",
      badge(call.status),
      " ",
      call.agentRole ? badge(call.agentRole, "role") : null,
      " ",
      brk ? badge(`break: ${brk.kind}`, "brk") : null,
    ),
    h("div", { class: "muted" }, `prompt ${call.promptTokens} tokens${view ? ` (shared prefix ${view.sharedPrefixTokens})` : ""} · finish ${call.finishReason ?? "—"} · policy v${fmt(call.policyVersion)}${view?.label ? ` · ${view.label}` : ""}${brk?.detail ? ` · ${brk.detail}` : ""}`),
    conversation(call),
    tokenView(call),
  );
}

function treeNode(node, me, run) {
  const label = `${node.tokens} tokens at ${node.start} · ${node.rollouts.length} rollout${node.rollouts.length > 1 ? "s" : ""} · mean reward ${fmt(node.meanReward)}`;
  return h(
    "li",
    {},
    h("span", {}, node.children.length > 1 ? `branch point after ${label}` : label),
    node.ends.length
      ? h("ul", {}, ...node.ends.map((e) => h("li", { class: e.rolloutId === me ? "me" : "" }, "■ ", link(`#/run/${encodeURIComponent(run)}/rollout/${encodeURIComponent(e.rolloutId)}`, e.rolloutId), ` reward ${fmt(e.reward)}`)))
      : null,
    node.children.length ? h("ul", {}, ...node.children.map((c) => treeNode(c, me, run))) : null,
  );
}

export async function rolloutPage(main, run, rolloutId, params) {
  const d = await api(`/api/runs/${encodeURIComponent(run)}/rollouts/${encodeURIComponent(rolloutId)}`);
  const r = d.result ?? {};
  const v = r.verifier ?? null;
  const views = new Map((d.trees?.sessions ?? []).flatMap((s) => s.calls.map((c) => [c.callId, c])));
  const adv = d.advantage;
  put(main,
    h("h1", {}, rolloutId),
    h(
      "div",
      { class: "bar" },
      r.status ? badge(r.status) : null,
      h("span", {}, `task ${r.taskId ?? "—"}`),
      h("span", {}, `harness ${r.harness ?? "—"}`),
      h("span", {}, `family ${r.family ?? "—"}`),
      h("span", {}, `reward ${fmt(r.score)}`),
      adv ? h("span", {}, `advantage ${fmt(adv.value)}${adv.included ? "" : ` (not trained: ${adv.excluded})`} · group mean ${fmt(adv.groupMean)} ± ${fmt(adv.groupStd)}`) : null,
    ),
    h("p", { class: "muted" }, d.advantageNote),
    h(
      "div",
      { class: "grid" },
      h(
        "div",
        { class: "card", id: "verifier" },
        h("h3", {}, "Verifier"),
        v ? h("table", {}, h("tbody", {}, h("tr", {}, h("td", {}, "score"), h("td", { class: "num" }, fmt(v.score))), ...Object.entries(v.subscores ?? {}).map(([k, x]) => h("tr", {}, h("td", {}, k), h("td", { class: "num" }, Array.isArray(x) ? x.map((y) => fmt(y)).join(", ") : fmt(x)))))) : h("p", { class: "muted" }, "no verifier result"),
        v?.error ? h("pre", {}, v.error) : null,
        h("div", { class: "muted" }, `${r.harnessDetail ?? ""} · exit ${r.exitCode ?? "—"}${r.error ? ` · ${r.error}` : ""}`),
        r.stdout ? h("details", {}, h("summary", {}, "harness stdout"), h("pre", {}, r.stdout)) : null,
        r.stderr ? h("details", {}, h("summary", {}, "harness stderr"), h("pre", {}, r.stderr)) : null,
      ),
      h("div", { class: "card tree", id: "group-tree" }, h("h3", {}, "GRPO group prefix tree"), d.groupTree ? h("ul", {}, treeNode(d.groupTree, rolloutId, run)) : h("p", { class: "muted" }, "no other rollout in its group")),
    ),
    h("h2", {}, `Sessions (${d.sessions.length}) and calls (${d.calls.length})`),
    h("p", { class: "muted" }, "Tokens: ", h("span", { class: "legend-sw", style: `background:${tint(1)}` }), "positive advantage", h("span", { class: "legend-sw", style: `background:${tint(-1)}` }), "negative", h("span", { class: "legend-sw", style: "background:#e6e6e6" }), "ignored by the loss"),
  );
  const sessions = d.trees?.sessions ?? d.sessions.map((s) => ({ sessionId: s.sessionId, subAgent: s.parentSessionId !== null, spawnedByCallId: s.spawnedByCallId }));
  const placed = new Set();
  // Sessions of attempts that failed on infrastructure and were run again under this rollout id: never trained.
  const earlier = new Set(d.earlierAttemptSessions ?? []);
  for (const s of sessions) {
    const calls = d.calls.filter((c) => c.sessionId === s.sessionId);
    calls.forEach((c) => placed.add(c.callId));
    const retried = earlier.has(s.sessionId);
    put(main,
      h(
        "div",
        { class: `session${s.subAgent ? " sub" : ""}${retried ? " retried" : ""}`, "data-session": s.sessionId },
        h("h3", {}, `session ${s.sessionId}${s.subAgent ? " (sub-agent)" : ""}`,
          retried ? h("span", { class: "muted", "data-retried": "1" }, " · earlier attempt: ended in an infrastructure error and was run again; not trained") : null, s.spawnedByCallId ? h("span", {}, " spawned by ", h("button", { class: "linklike", onclick: () => document.getElementById(s.spawnedByCallId)?.scrollIntoView() }, s.spawnedByCallId)) : null),
        ...calls.map((c) => callCard(c, views.get(c.callId))),
      ),
    );
  }
  const rest = d.calls.filter((c) => !placed.has(c.callId));
  if (rest.length) put(main, h("div", { class: "session" }, h("h3", {}, "other calls"), ...rest.map((c) => callCard(c, views.get(c.callId)))));
  const wanted = params.get("call");
  if (wanted) document.getElementById(wanted)?.scrollIntoView();
  return {};
}
