import { z } from "zod";
import { UserError } from "../core/errors.js";
import type { RolloutBundle, RolloutIngest, Store } from "./types.js";

/**
 * Validation of the rollout bundles nodes ship (types.ts `RolloutBundle`). A bundle crosses machines, so the store
 * checks it before anything lands: every field's shape, token ids that fit the Int32 blobs, and that the bundle is
 * about one rollout only (its sessions and calls name that rollout, calls name sessions of the bundle, parents and
 * spawning calls are calls of the bundle), so a node cannot graft records onto another rollout's trees.
 */

const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;

/** A loop instead of a per-element schema: a bundle can hold millions of token ids. */
const int32Array = z.custom<number[]>(
  (v) => Array.isArray(v) && v.every((x) => typeof x === "number" && Number.isInteger(x) && x >= INT32_MIN && x <= INT32_MAX),
  "expected an array of 32-bit integer token ids",
);
const numberArray = z.custom<number[]>((v) => Array.isArray(v) && v.every((x) => typeof x === "number" && !Number.isNaN(x)), "expected an array of numbers");

const id = z.string().min(1).max(200);
const jsonObject = z.record(z.string(), z.unknown());
const tokenRange = z.tuple([z.number().int().min(0), z.number().int().min(0)]);

const chatMessage = z.object({
  role: z.enum(["system", "user", "assistant", "tool"]),
  content: z.string(),
  reasoning: z.string().optional(),
  toolCalls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string() })).optional(),
  toolCallId: z.string().optional(),
  name: z.string().optional(),
});

const sessionSchema = z.object({
  sessionId: id,
  rolloutId: id.nullable(),
  harness: z.string().nullable(),
  agentRole: z.string().nullable(),
  parentSessionId: id.nullable(),
  spawnedByCallId: id.nullable(),
  createdAt: z.number().int(),
  metadata: jsonObject,
});

const callSchema = z.object({
  schemaVersion: z.number().int().min(1),
  callId: id,
  sessionId: id,
  rolloutId: id.nullable(),
  harness: z.string().nullable(),
  agentRole: z.string().nullable(),
  agentId: z.string().nullable(),
  protocol: z.enum(["openai-chat", "openai-responses", "anthropic-messages"]),
  stream: z.boolean(),
  status: z.enum(["ok", "error"]),
  error: z.object({ code: z.string(), message: z.string(), fault: z.string() }).nullable(),
  rawRequest: z.unknown(),
  rawResponse: z.unknown(),
  messages: z.array(chatMessage),
  tools: z.array(z.object({ name: z.string(), description: z.string().optional(), parameters: jsonObject })),
  response: chatMessage.nullable(),
  promptTokens: int32Array,
  completionTokens: int32Array,
  logprobs: numberArray,
  spans: z
    .object({
      toolCalls: z.array(z.object({ name: z.string(), action: z.array(tokenRange), args: z.array(tokenRange) })),
      malformed: z.number().int().min(0),
    })
    .nullable(),
  policyVersion: z.number().int().nullable(),
  samplingRequested: jsonObject,
  samplingUsed: z
    .object({ temperature: z.number(), maxTokens: z.number(), topP: z.number(), topK: z.number(), minP: z.number(), seed: z.number().optional() })
    .nullable(),
  finishReason: z.enum(["stop", "length", "abort"]).nullable(),
  timings: z.object({
    receivedAt: z.number(),
    engineStartAt: z.number().nullable(),
    firstTokenAt: z.number().nullable(),
    engineEndAt: z.number().nullable(),
    recordedAt: z.number(),
  }),
  parentCallId: id.nullable(),
  reusedPrefixTokens: z.number().int().min(0),
  break: z
    .object({
      kind: z.enum(["compaction", "edited_history", "dropped_turns", "stripped_reasoning", "reserialized_tool_args", "rewritten_tool_call_ids", "template_not_prefix_stable", "unknown_assistant_turn", "new_root"]),
      detail: z.string(),
      fromCallId: z.string().nullable(),
    })
    .nullable(),
  realigned: z.array(z.object({ messageIndex: z.number().int().min(0), kind: z.literal("reserialized_tool_args"), fromCallId: z.string().nullable() })).optional(),
  omittedTools: z.array(z.string()).optional(),
  spawnedByCallId: id.nullable(),
  engineInstance: z.string().min(1).max(500).optional(),
});

const bundleSchema = z.object({
  bundleVersion: z.literal(1),
  rolloutId: id,
  attempt: z.number().int().min(1),
  nodeId: id,
  sessions: z.array(sessionSchema),
  calls: z.array(callSchema),
  result: jsonObject,
});

/** The bundle, checked; throws UserError `invalid_rollout_bundle` saying what is wrong. */
export function parseRolloutBundle(input: unknown): RolloutBundle {
  const parsed = bundleSchema.safeParse(input);
  if (!parsed.success) {
    const why = parsed.error.issues.slice(0, 5).map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`).join("; ");
    throw new UserError("invalid_rollout_bundle", `rollout bundle does not validate: ${why}`);
  }
  const bundle = parsed.data as RolloutBundle;
  const problem = crossCheck(bundle);
  if (problem !== null) throw new UserError("invalid_rollout_bundle", `rollout bundle ${bundle.rolloutId} (attempt ${bundle.attempt}): ${problem}`, { details: { rolloutId: bundle.rolloutId, attempt: bundle.attempt } });
  return bundle;
}

/** The relations zod cannot express: one rollout, unique ids, references inside the bundle. */
function crossCheck(b: RolloutBundle): string | null {
  const sessions = new Set<string>();
  for (const s of b.sessions) {
    if (sessions.has(s.sessionId)) return `session ${s.sessionId} appears twice`;
    sessions.add(s.sessionId);
    if (s.rolloutId !== b.rolloutId) return `session ${s.sessionId} belongs to rollout ${String(s.rolloutId)}, not ${b.rolloutId}`;
  }
  const calls = new Set<string>(b.calls.map((c) => c.callId));
  if (calls.size !== b.calls.length) return "a call id appears twice";
  for (const s of b.sessions) {
    if (s.parentSessionId !== null && !sessions.has(s.parentSessionId)) return `session ${s.sessionId}'s parent session ${s.parentSessionId} is not in the bundle`;
    if (s.spawnedByCallId !== null && !calls.has(s.spawnedByCallId)) return `session ${s.sessionId} was spawned by call ${s.spawnedByCallId}, which is not in the bundle`;
  }
  for (const c of b.calls) {
    if (c.rolloutId !== b.rolloutId) return `call ${c.callId} belongs to rollout ${String(c.rolloutId)}, not ${b.rolloutId}`;
    if (!sessions.has(c.sessionId)) return `call ${c.callId}'s session ${c.sessionId} is not in the bundle`;
    if (c.parentCallId !== null && !calls.has(c.parentCallId)) return `call ${c.callId}'s parent call ${c.parentCallId} is not in the bundle`;
    if (c.spawnedByCallId !== null && !calls.has(c.spawnedByCallId)) return `call ${c.callId} was spawned by call ${c.spawnedByCallId}, which is not in the bundle`;
    if (c.reusedPrefixTokens > c.promptTokens.length) return `call ${c.callId} reuses ${c.reusedPrefixTokens} prompt tokens of ${c.promptTokens.length}`;
  }
  return null;
}

/** Whether a store accepts rollout bundles (Postgres, SQLite and memory do). */
export function isRolloutIngest(store: Store): store is Store & RolloutIngest {
  const s = store as Partial<RolloutIngest>;
  return typeof s.ingestRollout === "function" && typeof s.listLandedRollouts === "function";
}

/**
 * The credential hash stored for a session that came in a bundle: never a SHA-256 hex digest (it has a `:`), so no
 * presented credential hashes to it, and unique per session (the column is UNIQUE in SQLite).
 */
export function ingestedCredentialHash(sessionId: string): string {
  return `ingested:${sessionId}`;
}

/** The next landing time: wall-clock ms, strictly after the previous landing, so `afterLandedAt` is a cursor. */
export function nextLandedAt(previous: number | null): number {
  return Math.max(Date.now(), (previous ?? 0) + 1);
}


/**
 * A node's finished rollout as a bundle, read from its local store: the rollout's sessions (no credentials: stores
 * never return them) and calls in insertion order, so parents come before the calls that extend them. `earlier` names
 * sessions an earlier attempt of the same rollout left in that store: they are not this attempt's and stay out.
 */
export function collectRolloutBundle(store: Store, rolloutId: string, ship: { attempt: number; nodeId: string; result: Record<string, unknown>; earlier?: ReadonlySet<string> }): RolloutBundle {
  const earlier = ship.earlier ?? new Set<string>();
  const sessions = store.listSessions({ rolloutId }).filter((s) => !earlier.has(s.sessionId));
  const ids = new Set(sessions.map((s) => s.sessionId));
  const calls = store.listCalls({ rolloutId }).filter((c) => ids.has(c.sessionId));
  return { bundleVersion: 1, rolloutId, attempt: ship.attempt, nodeId: ship.nodeId, sessions, calls, result: ship.result };
}
