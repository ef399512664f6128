export { startDashboard } from "./server.js";
export type { Dashboard, DashboardOptions } from "./server.js";
export type { ClusterSnapshot, ClusterSource } from "./cluster.js";
export { RunCatalog, isRunId } from "./catalog.js";
