import { z } from "zod";
import { tokenSpans } from "../chat/token-spans.js";
import { UserError } from "../core/errors.js";
import type { CallRecord } from "../icr/records.js";
import type { Tokenizer } from "../tokenizer/types.js";
import { completionMasks } from "./masks.js";

/**
 * A process reward on part of one call's completion. `call`: every sampled token of the call; `tokens`: completion token
 * offsets [start, end); `chars`: a character range [start, end) of the decoded completion (e.g. a verifier quoting a
 * span); `tool_call`: the action and/or args tokens of the index-th parsed tool call (Harness-RL's per-decision rewards).
 */
export const ProcessRewardSchema = z.object({
  callId: z.string().min(1),
  value: z.number().finite(),
  source: z.string().optional(),
  target: z
    .discriminatedUnion("kind", [
      z.object({ kind: z.literal("call") }),
      z.object({ kind: z.literal("tokens"), start: z.number().int().min(0), end: z.number().int().min(0) }),
      z.object({ kind: z.literal("chars"), start: z.number().int().min(0), end: z.number().int().min(0) }),
      z.object({ kind: z.literal("tool_call"), index: z.number().int().min(0), part: z.enum(["action", "args", "all"]).default("all") }),
    ])
    .default({ kind: "call" }),
});

export type ProcessReward = z.input<typeof ProcessRewardSchema>;

/** Outcome reward per rollout id, plus optional process rewards. */
export interface RewardInput {
  outcome?: ReadonlyMap<string, number> | Readonly<Record<string, number>>;
  process?: readonly ProcessReward[];
}

export function outcomeFor(input: RewardInput | undefined, rolloutId: string): number {
  const o = input?.outcome;
  if (!o) return 0;
  if (o instanceof Map) return (o as ReadonlyMap<string, number>).get(rolloutId) ?? 0;
  return (o as Readonly<Record<string, number>>)[rolloutId] ?? 0;
}

/**
 * Maps process rewards onto completion tokens: call id → per-token reward over that call's completion (rewards that
 * cover the same token add up). `chars` and `tool_call` targets need the tokenizer to decode and align.
 */
export function alignProcessRewards(rewards: readonly ProcessReward[], callById: (callId: string) => CallRecord | undefined, tokenizer?: Tokenizer): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  for (const raw of rewards) {
    const parsed = ProcessRewardSchema.safeParse(raw);
    if (!parsed.success) throw new UserError("invalid_process_reward", `invalid process reward: ${z.prettifyError(parsed.error)}`);
    const r = parsed.data;
    const record = callById(r.callId);
    if (!record) throw new UserError("unknown_call", `process reward for unknown call ${r.callId}`);
    const n = record.completionTokens.length;
    let arr = out.get(r.callId);
    if (!arr) {
      arr = new Float32Array(n);
      out.set(r.callId, arr);
    }
    const t = r.target;
    const add = (i: number): void => {
      (arr as Float32Array)[i] = ((arr as Float32Array)[i] as number) + r.value;
    };
    if (t.kind === "call") for (let i = 0; i < n; i++) add(i);
    else if (t.kind === "tokens") {
      if (t.end > n || t.start > t.end) throw new UserError("invalid_process_reward", `token range [${t.start}, ${t.end}) outside call ${r.callId}'s ${n} completion tokens`);
      for (let i = t.start; i < t.end; i++) add(i);
    } else {
      if (!tokenizer) throw new UserError("invalid_process_reward", `a ${t.kind} process reward needs the model's tokenizer`);
      if (t.kind === "chars") {
        const spans = tokenSpans(tokenizer, record.completionTokens);
        for (let i = 0; i < n; i++) {
          const s = spans[i];
          if (s && s.start < t.end && t.start < s.end) add(i);
        }
      } else {
        const m = completionMasks(tokenizer, record.completionTokens).toolCalls[t.index];
        if (!m) throw new UserError("invalid_process_reward", `call ${r.callId} has no tool call #${t.index}`);
        if (t.part !== "args") for (const i of m.action) add(i);
        if (t.part !== "action") for (const i of m.args) add(i);
      }
    }
  }
  return out;
}
