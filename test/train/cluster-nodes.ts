import { join } from "node:path";
import { RolloutNode } from "../../src/cluster/node.js";

/**
 * In-process rollout nodes for the cluster training tests: one slot each (so a step's jobs need every node), bwrap
 * sandboxes and their own capture proxies, work directories under `root`. The caller drains them.
 */
export async function startNodes(redisUrl: string, root: string, ids: readonly string[] = ["node-a", "node-b"]): Promise<RolloutNode[]> {
  const nodes: RolloutNode[] = [];
  for (const nodeId of ids) {
    const node = new RolloutNode({ cluster: redisUrl, capacity: 1, nodeId, workDir: join(root, nodeId), sandbox: "bwrap", lockMs: 10_000, heartbeatMs: 500, log: () => undefined });
    nodes.push(node);
    await node.start();
  }
  return nodes;
}
