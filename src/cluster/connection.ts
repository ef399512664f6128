import type { RedisOptions } from "bullmq";
import { UserError } from "../core/errors.js";

/**
 * ioredis options from a `redis://[user][:password]@host[:port][/db]` URL. Workers need `maxRetriesPerRequest: null`
 * (BullMQ's blocking commands must wait through a Redis restart instead of failing); the reconnect backoff is capped
 * so a restarted Redis is found again within a second or two.
 */
export function redisOptionsOf(url: string, role: "worker" | "client" = "client"): RedisOptions {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UserError("invalid_cluster_url", `cluster URL "${redact(url)}" is not a URL (use redis://:<password>@<host>:<port>)`);
  }
  if (u.protocol !== "redis:") throw new UserError("invalid_cluster_url", `cluster URL "${redact(url)}" must start with redis://`);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new UserError("invalid_cluster_url", `cluster URL "${redact(url)}": the database must be a number`);
  return {
    host: u.hostname || "127.0.0.1",
    port: u.port ? Number(u.port) : 6379,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    db,
    connectTimeout: 5000,
    retryStrategy: (times: number) => Math.min(100 * times, 1000),
    ...(role === "worker" ? { maxRetriesPerRequest: null } : { maxRetriesPerRequest: 3 }),
  };
}

/** A URL with its password replaced by `***`, for logs and errors. */
export function redact(url: string): string {
  return url.replace(/(\/\/[^:/@]*:)[^@]*@/, "$1***@");
}
