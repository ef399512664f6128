import { hostname } from "node:os";
import { resolve } from "node:path";
import { RolloutNode } from "../../cluster/node.js";
import { redact } from "../../cluster/connection.js";
import { UserError } from "../../core/errors.js";
import { MEMORY_MB_MAX, MEMORY_MB_MIN } from "../../sandbox/options.js";
import { boundedIntOption, intOption, parseOptions } from "../args.js";
import type { Command } from "../command.js";

const usage = `Usage: harnessrl node --cluster <redis url> [options]

Runs a rollout node: pulls rollout jobs from the cluster's queue, runs each in its own sandbox through its own
capture proxy (records on local SQLite in --dir), and ships every finished rollout whole to the run's central
record store. When the store cannot be reached, finished rollouts wait in <dir>/spool and are shipped later.
Nodes may join and leave while a run goes on. SIGTERM/SIGINT stop it: running attempts go back to the queue.

Options:
  --cluster URL     the queue: redis://:<password>@<host>:<port> (or set HARNESSRL_CLUSTER)
  --store SPEC      the central record store (postgres://…, sqlite:<path>); default: the store each job names
  --capacity N      rollouts at once (default 4)
  --node-id ID      this node's name in heartbeats and records (default <hostname>-<pid>)
  --dir DIR         local records and spool (default .harnessrl-node/<node id>)
  --sandbox NAME    bwrap (default) or local-unsafe
  --lock-ms MS      job lock: a dead node's jobs are retried about this long after it died (default 10000)
  --heartbeat-ms MS heartbeat period (default 2000; the key expires after three)
  --sandbox-state-root DIR
                    the sandbox backend's state root (default: the backend's own, HARNESSRL_SANDBOX_ROOT)
  --unhealthy-after N
                    infra errors in a row after which the node stops pulling jobs for a while (default 3)
  --cooldown-ms MS  how long an unhealthy node stops pulling jobs (default 30000; 0: resume at once)
  --setup-timeout-ms MS
                    opening the rollout stack (engine, proxy, sandbox backend) longer than this fails the job
                    with the retryable cluster_setup_timeout (default 300000)
  --wedge-grace-ms MS
                    an attempt that outlives its harness + verifier + settle budgets by this much fails with the
                    retryable cluster_rollout_wedged and marks the node unhealthy (default 30000)
  --max-memory-mb N the most sandbox memory (MiB, 16 to 1048576) a job may ask for here; a job asking more fails
                    at once, without retries, with cluster_job_memory_over_cap. Jobs that ask for none get
                    2048 MiB, or N when lower (default: no cap). Advertised in the node's heartbeat (the
                    dashboard shows it; the control plane warns when a run asks more than the nodes allow)`;

export const nodeCommand: Command = {
  name: "node",
  summary: "run a rollout node that pulls rollout jobs from a cluster queue (Redis) and ships records to the run's store",
  usage,
  handlesSignals: true,
  async run(argv) {
    const values = parseOptions(
      argv,
      {
        cluster: { type: "string" },
        store: { type: "string" },
        capacity: { type: "string" },
        "node-id": { type: "string" },
        dir: { type: "string" },
        sandbox: { type: "string" },
        "lock-ms": { type: "string" },
        "heartbeat-ms": { type: "string" },
        "sandbox-state-root": { type: "string" },
        "unhealthy-after": { type: "string" },
        "cooldown-ms": { type: "string" },
        "setup-timeout-ms": { type: "string" },
        "wedge-grace-ms": { type: "string" },
        "max-memory-mb": { type: "string" },
      },
      usage,
    );
    // The URL holds the queue's password: HARNESSRL_CLUSTER keeps it out of the process list.
    const cluster = values.cluster ?? process.env.HARNESSRL_CLUSTER;
    if (!cluster) {
      console.error(usage);
      return 2;
    }
    const nodeId = values["node-id"] ?? `${hostname()}-${process.pid}`;
    const stateRoot = values["sandbox-state-root"];
    const maxMemoryMb = boundedIntOption("max-memory-mb", values["max-memory-mb"], MEMORY_MB_MIN, MEMORY_MB_MAX);
    if (stateRoot !== undefined && stateRoot.trim() === "") throw new UserError("invalid_arguments", "--sandbox-state-root must name a directory, got an empty string");
    const node = new RolloutNode({
      cluster,
      ...(values.store ? { store: values.store } : {}),
      capacity: intOption("capacity", values.capacity, 4, 1),
      nodeId,
      workDir: resolve(values.dir ?? `.harnessrl-node/${nodeId}`),
      sandbox: values.sandbox ?? "bwrap",
      lockMs: intOption("lock-ms", values["lock-ms"], 10_000, 1000),
      heartbeatMs: intOption("heartbeat-ms", values["heartbeat-ms"], 2000, 100),
      ...(stateRoot === undefined ? {} : { sandboxStateRoot: resolve(stateRoot) }),
      unhealthyAfter: intOption("unhealthy-after", values["unhealthy-after"], 3, 1),
      cooldownMs: intOption("cooldown-ms", values["cooldown-ms"], 30_000, 0),
      setupTimeoutMs: intOption("setup-timeout-ms", values["setup-timeout-ms"], 300_000, 100),
      wedgeGraceMs: intOption("wedge-grace-ms", values["wedge-grace-ms"], 30_000, 0),
      ...(maxMemoryMb === undefined ? {} : { maxMemoryMb }),
    });
    let stop: (() => void) | null = null;
    const stopped = new Promise<void>((done) => (stop = done));
    const onSignal = (sig: NodeJS.Signals): void => {
      node.stopping();
      console.error(`harnessrl node ${nodeId}: ${sig}, draining`);
      stop?.();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    await node.start();
    console.error(`harnessrl node ${nodeId}: pulling from ${redact(cluster)}`);
    await stopped;
    await node.drain();
    return 0;
  },
};
