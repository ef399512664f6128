import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { UserError } from "../core/errors.js";
import type { ProxyContext } from "./context.js";
import { readJsonBody } from "./http/body.js";
import { pathSegment, sendJson } from "./http/respond.js";
import { validate } from "./protocols/validate.js";
import { presentedCredentials, sameSecret } from "./sessions.js";

const IssueBody = z
  .object({
    rolloutId: z.string().nullish(),
    harness: z.string().nullish(),
    agentRole: z.string().nullish(),
    parentSessionId: z.string().nullish(),
    spawnedByCallId: z.string().nullish(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

/** In-flight and recorded call counts: a rollout is settled when nothing is in flight and the count is stable. */
export function sessionStatus(ctx: ProxyContext, sessionId: string): Record<string, unknown> {
  const session = ctx.sessions.get(sessionId);
  if (!session) throw new UserError("not_found", `session ${sessionId} does not exist`);
  return { session, inFlight: ctx.sessions.inFlightCount(sessionId), records: ctx.store.countCalls({ sessionId }) };
}

/**
 * Admin API (`/admin/…`), for the rollout runner: issue session credentials and watch sessions settle. It requires
 * the admin token given at start; session credentials never open it.
 */
export async function handleAdmin(ctx: ProxyContext, adminToken: string, path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!presentedCredentials(req.headers).some((c) => sameSecret(c, adminToken))) {
    throw new UserError("unauthorized", "the admin API needs the proxy's admin token (Authorization: Bearer <admin token>)");
  }
  if (path === "/admin/sessions") {
    if (req.method !== "POST") throw new UserError("method_not_allowed", "use POST /admin/sessions to issue a session");
    const body = validate(IssueBody, await readJsonBody(req, ctx.maxBodyBytes));
    sendJson(res, 201, ctx.sessions.issue(body));
    return;
  }
  const m = /^\/admin\/sessions\/([^/]+)$/.exec(path);
  if (m?.[1]) {
    if (req.method !== "GET") throw new UserError("method_not_allowed", "use GET /admin/sessions/<id>");
    sendJson(res, 200, sessionStatus(ctx, pathSegment(m[1])));
    return;
  }
  const r = /^\/admin\/rollouts\/([^/]+)$/.exec(path);
  if (r?.[1]) {
    if (req.method !== "GET") throw new UserError("method_not_allowed", "use GET /admin/rollouts/<id>");
    const rolloutId = pathSegment(r[1]);
    const sessions = ctx.store.listSessions({ rolloutId });
    const inFlight = sessions.reduce((n, s) => n + ctx.sessions.inFlightCount(s.sessionId), 0);
    sendJson(res, 200, { rolloutId, sessions: sessions.map((s) => s.sessionId), inFlight, records: ctx.store.countCalls({ rolloutId }) });
    return;
  }
  throw new UserError("not_found", `no admin route ${req.method ?? ""} ${path}`);
}
