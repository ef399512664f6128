import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { InfraError } from "../core/errors.js";

/**
 * A cluster on one machine for tests and benchmarks: a control-plane network namespace with a bridge, and one
 * namespace per rollout node joined to it by a veth pair. Addresses (10.213.0.0/24) exist only inside these
 * namespaces, so nothing reaches the host's networks; cutting a node off is `ip link set down` on its veth.
 * Needs root (CI runs as root).
 */
export interface NetnsTopology {
  /** The control plane's namespace (Redis, the store, the dispatching command run here). */
  readonly cp: string;
  /** The control plane's address, as nodes reach it. */
  readonly cpAddress: string;
  readonly nodes: { ns: string; address: string; hostSideLink: string }[];
  /** argv prefix that runs a command inside namespace `ns`. */
  exec(ns: string): string[];
  /** Cuts a node off the network (or reconnects it). */
  setLink(node: number, up: boolean): void;
  destroy(): void;
}

const SUBNET = "10.213.0";

function ip(args: string[]): void {
  const r = spawnSync("ip", args, { encoding: "utf8", timeout: 10_000 });
  if (r.status !== 0) throw new InfraError("spawn_failed", `ip ${args.join(" ")}: ${(r.stderr || r.error?.message || "").trim()}`);
}

/** Whether network namespaces can be made here (root, iproute2). */
export function netnsAvailable(): boolean {
  if (process.getuid?.() !== 0) return false;
  const name = `hrlprobe${randomBytes(3).toString("hex")}`;
  const r = spawnSync("ip", ["netns", "add", name], { timeout: 10_000 });
  if (r.status !== 0) return false;
  spawnSync("ip", ["netns", "del", name], { timeout: 10_000 });
  return true;
}

/** Creates the control-plane namespace and `nodes` node namespaces; undone by `destroy()` (also on a failed build). */
export function createNetnsTopology(nodes: number): NetnsTopology {
  if (nodes < 1 || nodes > 200) throw new InfraError("spawn_failed", `netns topology: ${nodes} nodes is out of range`);
  // Names stay under the 15 bytes Linux allows interface names.
  const tag = randomBytes(3).toString("hex");
  const cp = `hrl${tag}cp`;
  const made: string[] = [];
  const destroy = (): void => {
    for (const ns of made.reverse()) spawnSync("ip", ["netns", "del", ns], { timeout: 10_000 });
    made.length = 0;
  };
  const inNs = (ns: string, args: string[]): void => ip(["-n", ns, ...args]);
  try {
    ip(["netns", "add", cp]);
    made.push(cp);
    inNs(cp, ["link", "set", "lo", "up"]);
    inNs(cp, ["link", "add", "br0", "type", "bridge"]);
    inNs(cp, ["addr", "add", `${SUBNET}.1/24`, "dev", "br0"]);
    inNs(cp, ["link", "set", "br0", "up"]);
    const list: { ns: string; address: string; hostSideLink: string }[] = [];
    for (let i = 0; i < nodes; i++) {
      const ns = `hrl${tag}n${i}`;
      ip(["netns", "add", ns]);
      made.push(ns);
      const a = `h${tag}${i}a`;
      const b = `h${tag}${i}b`;
      // Created inside the node's namespace, the cp end moved over: nothing ever appears in the host's namespace.
      inNs(ns, ["link", "add", a, "type", "veth", "peer", "name", b]);
      inNs(ns, ["link", "set", b, "netns", cp]);
      inNs(ns, ["link", "set", "lo", "up"]);
      const address = `${SUBNET}.${10 + i}`;
      inNs(ns, ["addr", "add", `${address}/24`, "dev", a]);
      inNs(ns, ["link", "set", a, "up"]);
      inNs(cp, ["link", "set", b, "master", "br0"]);
      inNs(cp, ["link", "set", b, "up"]);
      list.push({ ns, address, hostSideLink: b });
    }
    return {
      cp,
      cpAddress: `${SUBNET}.1`,
      nodes: list,
      // nsenter joins only the network namespace; `ip netns exec` also remounts /sys, which hides the cgroup
      // hierarchy there and with it every sandbox's memory and pids limits.
      exec: (ns) => ["nsenter", `--net=/run/netns/${ns}`, "--"],
      setLink: (node, up) => inNs(cp, ["link", "set", list[node]!.hostSideLink, up ? "up" : "down"]),
      destroy,
    };
  } catch (e) {
    destroy();
    throw e;
  }
}
