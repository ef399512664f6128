import { timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { UserError } from "../core/errors.js";
import { newId, newSecret } from "../core/ids.js";
import type { SessionInfo } from "../icr/records.js";
import type { Store } from "../store/types.js";
import { callSamplingSeed, childSamplingSeed } from "./sampling-seeds.js";

export interface IssueSessionRequest {
  rolloutId?: string | null;
  harness?: string | null;
  agentRole?: string | null;
  parentSessionId?: string | null;
  spawnedByCallId?: string | null;
  metadata?: Record<string, unknown>;
  /**
   * The base of the session's sampling seeds: its n-th model call samples with a seed derived from it and n, and
   * its sub-agents' from it and their ids (common random numbers, sampling-seeds.ts). Absent: random.
   */
  samplingSeed?: number;
}

export interface IssuedSession {
  sessionId: string;
  /** The credential the harness sends (as an API key or a bearer token). */
  apiKey: string;
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s && s.trim() !== "" ? s.trim() : undefined;
}

/** Credentials a request presents: the bearer token and the x-api-key header, whichever the harness uses. */
export function presentedCredentials(headers: IncomingHttpHeaders): string[] {
  const out: string[] = [];
  const auth = headers.authorization;
  if (typeof auth === "string") {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (m?.[1]) out.push(m[1].trim());
  }
  const key = headers["x-api-key"];
  if (typeof key === "string" && key.trim() !== "") out.push(key.trim());
  return out;
}

export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Sessions: one per rollout (or sub-agent), each bound to a credential the proxy issued. Calls are attributed by
 * credential only, never by user-agent. In open mode any credential is accepted and becomes the session id.
 * Also tracks calls in flight per session, which rollout settling waits on.
 */
export class SessionRegistry {
  /** Positive lookups only: sessions never change once issued. */
  private readonly byCredential = new Map<string, SessionInfo>();
  private readonly inFlight = new Map<string, number>();
  private readonly children = new Map<string, SessionInfo>();
  /** Sessions issued with a sampling seed (and their sub-agents): the base, and the calls seeded so far. */
  private readonly seeds = new Map<string, { base: number; calls: number }>();

  constructor(
    private readonly store: Store,
    private readonly open: boolean,
  ) {}

  issue(request: IssueSessionRequest = {}): IssuedSession {
    if (request.parentSessionId && !this.store.getSession(request.parentSessionId)) {
      throw new UserError("not_found", `parent session ${request.parentSessionId} does not exist`);
    }
    const session: SessionInfo = {
      sessionId: newId("ses"),
      rolloutId: request.rolloutId ?? null,
      harness: request.harness ?? null,
      agentRole: request.agentRole ?? null,
      parentSessionId: request.parentSessionId ?? null,
      spawnedByCallId: request.spawnedByCallId ?? null,
      createdAt: Date.now(),
      metadata: { ...request.metadata, ...(request.samplingSeed === undefined ? {} : { samplingSeed: request.samplingSeed }) },
    };
    const apiKey = newSecret("hrl");
    this.store.createSession(session, apiKey);
    this.byCredential.set(apiKey, session);
    if (request.samplingSeed !== undefined) this.seeds.set(session.sessionId, { base: request.samplingSeed >>> 0, calls: 0 });
    return { sessionId: session.sessionId, apiKey };
  }

  /** The session a request's credential belongs to; 401 (nothing recorded) when none does. */
  authenticate(headers: IncomingHttpHeaders): SessionInfo {
    const presented = presentedCredentials(headers);
    for (const credential of presented) {
      const known = this.lookup(credential);
      if (known) return known;
    }
    if (this.open) return this.openSession(presented[0] ?? "anonymous");
    throw new UserError(
      "unauthorized",
      presented.length === 0
        ? "no credential: send the session's API key as `Authorization: Bearer <key>` or `x-api-key: <key>`"
        : "unknown credential: this proxy only accepts API keys it issued for a session",
    );
  }

  /**
   * Sub-agents get sessions of their own: a request that names the call which spawned it (`x-harnessrl-parent-call`)
   * is attributed to a child session of the credential's session, one per `x-harnessrl-agent-id` (or per spawning call
   * when the harness gives no id). Each sub-agent conversation is then planned token-exactly on its own, and linked to
   * its parent session and spawning call. The child has no credential of its own: it is reached only through its parent.
   */
  forAgent(session: SessionInfo, headers: IncomingHttpHeaders): SessionInfo {
    const parentCall = headerValue(headers, "x-harnessrl-parent-call");
    if (!parentCall) return session;
    const agent = (headerValue(headers, "x-harnessrl-agent-id") ?? parentCall).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 64);
    const childId = `${session.sessionId}~${agent}`;
    const parentSeeds = this.seeds.get(session.sessionId);
    if (parentSeeds && !this.seeds.has(childId)) this.seeds.set(childId, { base: childSamplingSeed(parentSeeds.base, agent), calls: 0 });
    const known = this.children.get(childId) ?? this.store.getSession(childId);
    if (known) {
      this.children.set(childId, known);
      return known;
    }
    const child: SessionInfo = {
      sessionId: childId,
      rolloutId: session.rolloutId,
      harness: session.harness,
      agentRole: headerValue(headers, "x-harnessrl-agent-role") ?? "subagent",
      parentSessionId: session.sessionId,
      spawnedByCallId: parentCall,
      createdAt: Date.now(),
      metadata: { agentId: agent },
    };
    this.store.createSession(child, newSecret("hrlchild"));
    this.children.set(childId, child);
    return child;
  }

  private lookup(credential: string): SessionInfo | null {
    const cached = this.byCredential.get(credential);
    if (cached) return cached;
    const found = this.store.sessionByCredential(credential);
    if (found) this.byCredential.set(credential, found);
    return found;
  }

  /** Open mode: the credential itself is the session id (created on first use). */
  private openSession(credential: string): SessionInfo {
    const existing = this.store.getSession(credential);
    if (existing) {
      // An issued session's id is not a credential: open mode must not let anyone write into it.
      if (existing.metadata.open !== true) throw new UserError("unauthorized", "unknown credential: it names a session issued with its own key");
      this.byCredential.set(credential, existing);
      return existing;
    }
    const session: SessionInfo = {
      sessionId: credential,
      rolloutId: null,
      harness: null,
      agentRole: null,
      parentSessionId: null,
      spawnedByCallId: null,
      createdAt: Date.now(),
      metadata: { open: true },
    };
    this.store.createSession(session, credential);
    this.byCredential.set(credential, session);
    return session;
  }

  /** The sampling seed of the session's next model call; undefined when the session was issued without one. */
  nextSamplingSeed(sessionId: string): number | undefined {
    const s = this.seeds.get(sessionId);
    if (!s) return undefined;
    return callSamplingSeed(s.base, s.calls++);
  }

  get(sessionId: string): SessionInfo | null {
    return this.store.getSession(sessionId);
  }

  begin(sessionId: string): void {
    this.inFlight.set(sessionId, (this.inFlight.get(sessionId) ?? 0) + 1);
  }

  end(sessionId: string): void {
    const n = (this.inFlight.get(sessionId) ?? 1) - 1;
    if (n <= 0) this.inFlight.delete(sessionId);
    else this.inFlight.set(sessionId, n);
  }

  inFlightCount(sessionId: string): number {
    return this.inFlight.get(sessionId) ?? 0;
  }

  totalInFlight(): number {
    let n = 0;
    for (const v of this.inFlight.values()) n += v;
    return n;
  }
}
