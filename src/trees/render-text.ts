import type { CallView, ForestView, SessionView } from "./view.js";

function ratio(unique: number, flat: number): string {
  return flat === 0 ? "-" : (unique / flat).toFixed(2);
}

function callLine(c: CallView): string {
  const parts = [`${c.callId}`, `[${c.label}]`, `prompt ${c.promptTokens}`];
  if (c.inserted) parts.push(`(+${c.inserted.tokens} ${c.inserted.kind})`);
  parts.push(`completion ${c.completionTokens}`, `trainable ${c.trainableTokens}`);
  if (c.status !== "ok") parts.push("ERROR");
  else if (c.finishReason && c.finishReason !== "stop") parts.push(`finish=${c.finishReason}`);
  if (c.retryOf) parts.push(`retry of ${c.retryOf}`);
  if (c.break) parts.push(`break ${c.break.kind}${c.break.fromCallId ? ` from ${c.break.fromCallId}` : ""}`);
  if (c.recordedParent !== c.treeParent && !c.retryOf && !(c.break && c.break.fromCallId === c.recordedParent)) parts.push(`(recorded parent ${c.recordedParent ?? "none"} ≠ verified ${c.treeParent ?? "none"})`);
  if (c.policyVersion !== null) parts.push(`v${c.policyVersion}`);
  return parts.join("  ");
}

/** Draws a session: one block per segment, calls as a tree by verified parent within the segment. */
export function renderSession(s: SessionView): string[] {
  const head = s.subAgent ? `sub-agent${s.spawnedByCallId ? ` spawned by ${s.spawnedByCallId}` : ""}` : "session";
  const out = [
    `${head} ${s.sessionId}: ${s.calls.length} calls, ${s.segments.length} segments, ${s.paths.length} paths, ${s.uniqueTokens} unique / ${s.flatTokens} flat tokens (ratio ${ratio(s.uniqueTokens, s.flatTokens)}), ${s.trainableTokens} trainable`,
  ];
  const byId = new Map(s.calls.map((c) => [c.callId, c]));
  for (const seg of s.segments) {
    const link = seg.linkedFrom ? ` ← ${seg.linkedFrom}${seg.spawnedBy === seg.linkedFrom ? " (spawned it)" : ""}` : "";
    const agent = seg.agentId ? ` agent ${seg.agentId}` : "";
    // The conversation it belongs to, where the label (how it began) does not say: e.g. a side conversation's rewrite.
    const lineage = seg.lineage !== seg.label ? ` · ${seg.lineage} conversation` : "";
    out.push(`  segment ${seg.index} ${seg.label}${agent}${seg.breakKind ? ` (${seg.breakKind})` : ""}${link}${lineage}`);
    const inSeg = new Set(seg.callIds);
    const roots = seg.callIds.filter((id) => {
      const p = byId.get(id)?.treeParent ?? null;
      return p === null || !inSeg.has(p);
    });
    const draw = (id: string, prefix: string, last: boolean): void => {
      const c = byId.get(id);
      if (!c) return;
      out.push(`  ${prefix}${last ? "└─ " : "├─ "}${callLine(c)}`);
      const kids = c.children.filter((k) => inSeg.has(k));
      kids.forEach((k, i) => draw(k, prefix + (last ? "   " : "│  "), i === kids.length - 1));
    };
    roots.forEach((r, i) => draw(r, "", i === roots.length - 1));
  }
  if (s.nodes) {
    out.push("  radix nodes (id ← parent: tokens @depth role call):");
    for (const n of s.nodes) out.push(`    ${n.id} ← ${n.parent}: ${n.tokens} @${n.depth} ${n.role}${n.callId ? ` ${n.callId}` : ""}${n.endsCalls.length ? ` ends ${n.endsCalls.join(",")}` : ""}`);
  }
  if (s.disagreements.length > 0) {
    out.push(`  parent disagreements: ${s.disagreements.length}`);
    for (const d of s.disagreements) out.push(`    ${d.callId}: recorded ${d.recorded ?? "none"}, verified ${d.verified ?? "none"} — ${d.reason}`);
  }
  return out;
}

export function renderForest(f: ForestView): string {
  const calls = f.sessions.reduce((n, s) => n + s.calls.length, 0);
  const unique = f.sessions.reduce((n, s) => n + s.uniqueTokens, 0);
  const flat = f.sessions.reduce((n, s) => n + s.flatTokens, 0);
  const lines = [`rollout ${f.rolloutId}: ${f.sessions.length} sessions, ${calls} calls, ${unique} unique / ${flat} flat tokens (ratio ${ratio(unique, flat)})`];
  for (const s of f.sessions) lines.push(...renderSession(s));
  return lines.join("\n");
}
