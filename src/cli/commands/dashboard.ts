import { parseArgs } from "node:util";
import { UserError, errorMessage } from "../../core/errors.js";
import { startDashboard } from "../../dashboard/index.js";
import type { Command } from "../command.js";
import { untilStopped } from "../until-stopped.js";

const usage = `Usage:
  harnessrl dashboard [--runs DIR] [--port P] [--host H] [--token T]

Serves a live web dashboard of the runs under DIR (a directory of runs, or one run directory): the runs with their
status, step, policy version and held-out pass@1 before/after; each run's curves (reward, pass@1 per harness, KL,
mismatch, clipping, entropy, grad norm, throughput, staleness, scheduler, CAPO) and evaluations; its rollouts table
(filtered and paged on the server) and each rollout's sessions, transcripts, token view coloured by advantage and
its GRPO group's prefix tree. Pages update while train, eval or rollout writes (server-sent events). Everything is
served from this process; nothing is fetched from elsewhere.

Options:
  --runs DIR   runs directory (default runs)
  --port P     port (default 7860; 0 picks a free one)
  --host H     interface (default 127.0.0.1). Any non-loopback address needs --token
  --token T    access token (at least 16 characters; default HARNESSRL_DASHBOARD_TOKEN). Open the page once with
               ?token=T; API clients send Authorization: Bearer T`;

async function run(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, strict: true, options: { runs: { type: "string" }, port: { type: "string" }, host: { type: "string" }, token: { type: "string" } } }));
  } catch (e) {
    throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
  }
  let port = 7860;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535) throw new UserError("invalid_arguments", `--port must be a port number, got "${values.port}"`);
  }
  const token = values.token ?? process.env.HARNESSRL_DASHBOARD_TOKEN;
  const dash = await startDashboard({ runs: values.runs ?? "runs", port, ...(values.host !== undefined ? { host: values.host } : {}), ...(token ? { token } : {}) });
  console.log(`harnessrl dashboard: ${dash.url}${token ? "?token=<your token>" : ""}  (runs: ${values.runs ?? "runs"}; Ctrl-C stops)`);
  await untilStopped();
  await dash.close();
  return 0;
}

export const dashboardCommand: Command = { name: "dashboard", handlesSignals: true, summary: "serve a live web dashboard of runs and their rollouts", usage, run };
