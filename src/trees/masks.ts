import { UserError } from "../core/errors.js";
import type { CallRecord, CompletionSpans, TokenRange } from "../icr/records.js";

/** Action / args flags over one call's completion tokens, plus what the proxy's parser found. */
export interface CompletionMasks {
  /** 1 on tokens of a tool call's name, its control tags and the JSON around the name (everything in the block but the arguments value). */
  action: Uint8Array;
  /** 1 on tokens of a tool call's arguments value. */
  args: Uint8Array;
  /** Per tool call (parser order): its action and args token indices, for process rewards per decision. */
  toolCalls: { name: string; action: number[]; args: number[] }[];
  malformed: number;
}

/**
 * The spans the proxy recorded for a call. Records from ICR schema 1 have none: their masks and validity would need the
 * completion re-parsed with the codec that sampled it, which the batch path does not have — re-record instead.
 */
export function recordedSpans(record: CallRecord): CompletionSpans {
  if (record.spans) return record.spans;
  if (record.completionTokens.length === 0) return { toolCalls: [], malformed: 0 };
  throw new UserError(
    "record_without_spans",
    `call ${record.callId} was recorded with ICR schema ${record.schemaVersion}, which has no completion spans (tool-call token ranges); re-record its rollouts with this harnessrl to train on them`,
    { details: { callId: record.callId, schemaVersion: record.schemaVersion } },
  );
}

function indices(ranges: readonly TokenRange[], n: number): number[] {
  const out: number[] = [];
  for (const [start, end] of ranges) for (let i = Math.max(0, start); i < Math.min(end, n); i++) out.push(i);
  return out;
}

/**
 * A call's action/args masks from its recorded spans (no decoding, no parsing). A token in two calls' blocks (a token
 * that closes one call and opens the next) is args if either call has it as args.
 */
export function completionMasks(record: CallRecord): CompletionMasks {
  const spans = recordedSpans(record);
  const n = record.completionTokens.length;
  const action = new Uint8Array(n);
  const args = new Uint8Array(n);
  const toolCalls = spans.toolCalls.map((tc) => ({ name: tc.name, action: indices(tc.action, n), args: indices(tc.args, n) }));
  for (const tc of toolCalls) for (const i of tc.action) if (args[i] === 0) action[i] = 1;
  for (const tc of toolCalls) {
    for (const i of tc.args) {
      args[i] = 1;
      action[i] = 0;
    }
  }
  return { action, args, toolCalls, malformed: spans.malformed };
}
