import { parseArgs } from "node:util";
import { UserError, errorMessage } from "../../core/errors.js";
import { redact } from "../../cluster/connection.js";
import { ClusterStatusReader } from "../../cluster/status.js";
import { startDashboard } from "../../dashboard/index.js";
import { portOption } from "../args.js";
import type { Command } from "../command.js";
import { untilStopped } from "../until-stopped.js";

const usage = `Usage:
  harnessrl dashboard [--runs DIR] [--port P] [--host H] [--token T] [--cluster URL]

Serves a live web dashboard of the runs under DIR (a directory of runs, or one run directory): the runs with their
status, step, policy version and held-out pass@1 before/after; each run's curves (reward, pass@1 per harness, KL,
mismatch, clipping, entropy, grad norm, throughput, staleness, scheduler, CAPO) and evaluations; its rollouts table
(filtered and paged on the server) and each rollout's sessions, transcripts, token view coloured by advantage and
its GRPO group's prefix tree; with --cluster, the rollout nodes (capacity, health) and the rollout queue (jobs
waiting, running, failed, with the failures' reasons). Pages update while train, eval or rollout writes (server-sent events). Everything is
served from this process; nothing is fetched from elsewhere.

Options:
  --runs DIR   runs directory (default runs)
  --port P     port (default 7860; 0 picks a free one)
  --host H     interface (default 127.0.0.1). Any non-loopback address needs --token
  --token T    access token (at least 16 characters; default HARNESSRL_DASHBOARD_TOKEN). Open the page once with
               ?token=T; API clients send Authorization: Bearer T
  --cluster URL  the cluster's Redis (redis://:<password>@<host>:<port>, the run config's cluster.queue; default
               HARNESSRL_CLUSTER): adds a cluster page of rollout nodes and jobs (read-only)`;

async function run(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, strict: true, options: { runs: { type: "string" }, port: { type: "string" }, host: { type: "string" }, token: { type: "string" }, cluster: { type: "string" } } }));
  } catch (e) {
    throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
  }
  const port = portOption(values.port, 7860);
  const token = values.token ?? process.env.HARNESSRL_DASHBOARD_TOKEN;
  const clusterUrl = values.cluster ?? process.env.HARNESSRL_CLUSTER;
  // Connects lazily: the dashboard starts even while the cluster's Redis is down (the page then says so).
  const cluster = clusterUrl ? new ClusterStatusReader(clusterUrl) : undefined;
  let dash;
  try {
    dash = await startDashboard({ runs: values.runs ?? "runs", port, ...(values.host !== undefined ? { host: values.host } : {}), ...(token ? { token } : {}), ...(cluster ? { cluster } : {}) });
  } catch (e) {
    await cluster?.close();
    throw e;
  }
  console.log(`harnessrl dashboard: ${dash.url}${token ? "?token=<your token>" : ""}  (runs: ${values.runs ?? "runs"}${clusterUrl ? `; cluster: ${redact(clusterUrl)}` : ""}; Ctrl-C stops)`);
  await untilStopped();
  await dash.close();
  await cluster?.close();
  return 0;
}

export const dashboardCommand: Command = { name: "dashboard", handlesSignals: true, summary: "serve a live web dashboard of runs and their rollouts", usage, run };
