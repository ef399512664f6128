import type { CallRecord } from "../icr/records.js";

/** One human-readable line per recorded call, for `harnessrl proxy --verbose`. */
export function callLogLine(r: CallRecord): string {
  const ms = r.timings.engineEndAt !== null ? r.timings.engineEndAt - r.timings.receivedAt : null;
  const parts = [
    new Date(r.timings.recordedAt).toISOString(),
    r.callId,
    `session=${r.sessionId}`,
    r.protocol + (r.stream ? "+sse" : ""),
    r.status === "ok" ? `ok ${r.finishReason ?? ""}` : `error ${r.error?.code ?? ""}`,
    `prompt=${r.promptTokens.length}`,
    `reused=${r.reusedPrefixTokens}`,
    `completion=${r.completionTokens.length}`,
  ];
  if (r.response?.toolCalls?.length) parts.push(`tools=${r.response.toolCalls.map((c) => c.name).join(",")}`);
  if (r.break) parts.push(`break=${r.break.kind}`);
  if (r.agentRole) parts.push(`role=${r.agentRole}`);
  if (ms !== null) parts.push(`${ms}ms`);
  return parts.join(" ");
}
