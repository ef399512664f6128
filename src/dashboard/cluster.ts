/**
 * What the cluster page shows (rollout nodes, issue 21) and the source the dashboard is given for it. The dashboard
 * may not import src/cluster/ (same layer), so the CLI injects the Redis reader (`ClusterStatusReader`,
 * src/cluster/status.ts), which satisfies this interface; without a source `/api/cluster` answers 404 and the client
 * shows no cluster link.
 */
export interface ClusterSnapshot {
  /** The BullMQ queue read. */
  queue: string;
  /** When the snapshot was taken (ms since the epoch). */
  at: number;
  /**
   * `up`: heartbeat fresh, pulling jobs; `cooling`: fresh but paused after infra errors; `lost`: heartbeat expired.
   * `maxMemoryMb`: the node's cap on a job's sandbox memory (`--max-memory-mb`); null: none.
   */
  nodes: { nodeId: string; host: string; state: "up" | "cooling" | "lost"; healthy: boolean; capacity: number; running: number; completed: number; spooled: number; startedAt: number; lastSeenAt: number; maxMemoryMb: number | null }[];
  jobs: { waiting: number; running: number; failed: number; delayed: number; completed: number };
  /** The newest jobs of the failed set, with the reason of their last attempt. */
  failed: { id: string; reason: string; attempts: number; failedAt: number | null }[];
}

export interface ClusterSource {
  snapshot(): Promise<ClusterSnapshot>;
}
