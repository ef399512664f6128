/**
 * The seam for a cluster page (rollout nodes, issue 21): a source the dashboard may be given. None exists yet; without
 * one, `/api/cluster` answers 404 and the client shows no cluster link.
 */
export interface ClusterSnapshot {
  nodes: { nodeId: string; capacity: number; running: number; healthy: boolean; lastSeenAt: number }[];
  jobs: { waiting: number; running: number; failed: number };
}

export interface ClusterSource {
  snapshot(): Promise<ClusterSnapshot>;
}
