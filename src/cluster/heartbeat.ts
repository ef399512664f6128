import type { Redis } from "ioredis";
import { z } from "zod";

/** Where node heartbeats live in the cluster's Redis: `harnessrl:node:<id>`, each expiring unless renewed. */
export const HEARTBEAT_PREFIX = "harnessrl:node:";

const count = z.number().int().min(0);

/**
 * A node's heartbeat as readers take it. Anyone with the queue's password can write under the prefix, so every value
 * is parsed, never trusted. Only `nodeId`, `capacity` and `at` are required: fields added later (`maxMemoryMb`) or
 * missing from a foreign writer get defaults, so heartbeats of nodes older than a field still parse. Unknown fields
 * are ignored (a newer node's heartbeat parses here too).
 */
export const heartbeatSchema = z
  .object({
    nodeId: z.string().min(1).max(200),
    host: z.string().max(300).default(""),
    capacity: count,
    active: count.default(0),
    healthy: z.boolean().default(true),
    spooled: count.default(0),
    completed: count.default(0),
    startedAt: z.number().optional(),
    at: z.number(),
    /**
     * The most sandbox memory (MiB) a job may ask for on the node (`--max-memory-mb`); null: no cap. A heartbeat
     * without the field (a node older than it) reads as uncapped: such a node had no cap to advertise or enforce.
     */
    maxMemoryMb: z.number().int().min(1).nullable().default(null),
  })
  .transform((hb) => ({ ...hb, startedAt: hb.startedAt ?? hb.at }));

/** The heartbeat a node keeps in Redis. */
export type NodeHeartbeat = z.output<typeof heartbeatSchema>;

/** Writes a node's heartbeat, gone after `ttlMs` unless written again (the dashboard and the control plane read it). */
export async function writeHeartbeat(client: Redis, hb: NodeHeartbeat, ttlMs: number): Promise<void> {
  await client.set(`${HEARTBEAT_PREFIX}${hb.nodeId}`, JSON.stringify(hb), "PX", ttlMs);
}

/** A heartbeat value read from Redis, or null when it is not one (a foreign or torn value under the prefix). */
export function parseHeartbeat(raw: string): NodeHeartbeat | null {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return null;
  }
  const r = heartbeatSchema.safeParse(v);
  return r.success ? r.data : null;
}

/** Every live heartbeat (`SCAN` + `MGET`), sorted by node id; values that are not heartbeats are skipped. */
export async function readHeartbeats(client: Redis): Promise<NodeHeartbeat[]> {
  const out: NodeHeartbeat[] = [];
  let cursor = "0";
  for (let i = 0; i < 1000; i++) {
    const [next, keys] = await client.scan(cursor, "MATCH", `${HEARTBEAT_PREFIX}*`, "COUNT", 200);
    const values = keys.length > 0 ? await client.mget(...keys) : [];
    for (const v of values) {
      const hb = v === null ? null : parseHeartbeat(v);
      if (hb) out.push(hb);
    }
    cursor = next;
    if (cursor === "0") break;
  }
  return out.sort((a, b) => a.nodeId.localeCompare(b.nodeId));
}
