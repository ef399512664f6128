import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync } from "node:fs";
import { dirname, sep } from "node:path";

/**
 * The sandbox's filesystem: bwrap's own tmpfs as root (remounted read-only at the end) with the host's system
 * directories bound read-only, fresh tmpfs for /tmp, private /proc and /dev, the sandbox's own workspace, HOME and
 * bridge socket directory, and the exec agent's code. Everything else on the host (/root, /home, /tmp, /run, other sandboxes, the proxy's database) is
 * simply not there, unless the caller binds it explicitly read-only (e.g. a harness installation).
 */
export const IN_SANDBOX = {
  workspace: "/workspace",
  home: "/home/sandbox",
  agentDir: "/run/harnessrl/agent",
  agentMain: "/run/harnessrl/agent/main.cjs",
  bridgeDir: "/run/harnessrl/bridge",
  bridgeSocket: "/run/harnessrl/bridge/proxy.sock",
} as const;

const SYSTEM_DIRS = ["usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "var", "sys"];

/**
 * Host details under the bound /sys that a sandbox has no business seeing, each covered by an empty tmpfs: the cgroup
 * tree (every other sandbox's memory use and limits) and the network interfaces (the sandbox's own namespace has only
 * `lo`; /sys shows the host's): /sys/class/net, and the `net` folder of every interface's device.
 */
export function sysMasks(): string[] {
  const masks = new Set(["/sys/fs/cgroup", "/sys/class/net", "/sys/devices/virtual/net"]);
  let names: string[] = [];
  try {
    names = readdirSync("/sys/class/net");
  } catch {
    // no sysfs network view
  }
  for (const name of names) {
    try {
      masks.add(dirname(realpathSync(`/sys/class/net/${name}`)));
    } catch {
      // vanished interface
    }
  }
  return [...masks].filter((m) => existsSync(m)).sort();
}

/** System binds, computed once per backend (merged-/usr systems get symlinks, as on the host). */
export function systemMountArgs(): { args: string[]; bound: string[] } {
  const args: string[] = [];
  const bound: string[] = [];
  for (const name of SYSTEM_DIRS) {
    const host = `/${name}`;
    let st;
    try {
      st = lstatSync(host);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push("--symlink", readlinkSync(host), host);
    else if (st.isDirectory()) {
      args.push("--ro-bind", host, host);
      bound.push(host);
    }
  }
  if (bound.includes("/sys")) for (const m of sysMasks()) args.push("--tmpfs", m, "--remount-ro", m);
  return { args, bound };
}

function under(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

export interface MountPlan {
  systemArgs: string[];
  systemBound: string[];
  /** The node binary's installation, bound when it lies outside the system directories. */
  nodePrefix: string | undefined;
  /** dist/sandbox/agent: the exec agent and its node-built-ins-only modules. */
  agentHostDir: string;
  hidePaths: string[];
}

export function planNode(execPath: string, systemBound: string[]): string | undefined {
  if (systemBound.some((d) => under(execPath, d))) return undefined;
  return dirname(dirname(execPath));
}

export interface SandboxMountInput {
  workspaceDir: string;
  homeDir: string;
  /** Host directory of the proxy bridge socket; bound even before a proxy is known (pooled sandboxes get one later). */
  bridgeDir: string;
  /** Host directory with a copy of the exec agent's code. */
  agentDir: string;
  readOnlyPaths: string[];
}

export function mountArgs(plan: MountPlan, s: SandboxMountInput): string[] {
  // Fresh /proc, /dev, /tmp first: explicit read-only binds below may lie under them (e.g. a harness under /tmp).
  const args = [...plan.systemArgs, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"];
  // The host's /var/tmp is as public as /tmp (task suites, other tools' scratch files): an empty one instead.
  if (plan.systemBound.includes("/var") && existsSync("/var/tmp")) args.push("--tmpfs", "/var/tmp");
  const visible = [...plan.systemBound];
  if (plan.nodePrefix) {
    args.push("--ro-bind", plan.nodePrefix, plan.nodePrefix);
    visible.push(plan.nodePrefix);
  }
  for (const p of s.readOnlyPaths) {
    if (!existsSync(p)) continue;
    args.push("--ro-bind", p, p);
    visible.push(p);
  }
  // Hidden paths that would otherwise show through a visible bind get an empty tmpfs on top.
  for (const h of plan.hidePaths) {
    if (visible.some((v) => under(h, v) && h !== v) && existsSync(h)) args.push("--tmpfs", h);
  }
  args.push("--bind", s.workspaceDir, IN_SANDBOX.workspace, "--bind", s.homeDir, IN_SANDBOX.home);
  args.push("--ro-bind", s.agentDir, IN_SANDBOX.agentDir, "--ro-bind", s.bridgeDir, IN_SANDBOX.bridgeDir);
  args.push("--remount-ro", "/", "--chdir", IN_SANDBOX.workspace);
  return args;
}
