import type { CallRef } from "../batch/batch-index.js";
import type { Store } from "../store/types.js";

/** The role of a call whose record names none (a single-agent harness's main agent). */
export const DEFAULT_AGENT_ROLE = "main";

/**
 * Multi-agent training: with `trainRoles` (e.g. ["central"] for central-only training), a predicate that is true for
 * calls whose agent role (from the call records) is not trained, so their tokens leave the loss; null when every role
 * trains (joint training). Sub-agent calls are then served by the same engine but contribute no gradient.
 */
export function untrainedRoleFilter(store: Store, rolloutIds: readonly string[], trainRoles: readonly string[] | undefined): ((call: CallRef) => boolean) | null {
  if (!trainRoles) return null;
  const trained = new Set(trainRoles);
  const roleOf = new Map<string, string | null>();
  for (const id of rolloutIds) for (const c of store.listCalls({ rolloutId: id })) roleOf.set(c.callId, c.agentRole);
  return (call) => !trained.has(roleOf.get(call.callId) ?? DEFAULT_AGENT_ROLE);
}
