import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { startRedisServer, type RedisServerHandle } from "../../src/cluster/redis-server.js";

/**
 * A scratch folder and a private redis-server in it for one test file: the server started before the file's tests,
 * killed and the folder removed after them. Call it before registering hooks that need the server at teardown
 * (draining nodes): vitest runs after-hooks last registered first.
 */
export function usePrivateRedis(prefix: string): { readonly root: string; readonly redis: RedisServerHandle } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  let redis: RedisServerHandle | undefined;
  beforeAll(async () => {
    redis = await startRedisServer({ dir: join(root, "redis") });
  }, 60_000);
  afterAll(async () => {
    try {
      await redis?.kill();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);
  return {
    root,
    get redis(): RedisServerHandle {
      if (!redis) throw new Error("the redis-server starts in beforeAll; use it inside a test");
      return redis;
    },
  };
}
