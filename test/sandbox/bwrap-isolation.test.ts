import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import type { Server } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { BwrapBackend } from "../../src/sandbox/bwrap/backend.js";
import { SandboxCgroup, detectCgroups } from "../../src/sandbox/cgroups.js";
import { processesWithSandboxId } from "../../src/sandbox/state.js";
import type { Sandbox } from "../../src/sandbox/types.js";
import { DIST_BUILTINS, DIST_SANDBOX, LIMITS, hostProcessesMentioning, proxyGetScript, sleep, spawnControlPlane, startStandInProxy, tcpProbeScript, tempRoot } from "./helpers.js";
import type { StandInProxy } from "./helpers.js";

const layout = detectCgroups();
const cgroupOf = (id: string, withCpu = false): SandboxCgroup => SandboxCgroup.forSandbox(layout, id, withCpu);

function nothingLeft(s: Sandbox, stateDir: string): void {
  expect(existsSync(stateDir)).toBe(false);
  expect(existsSync(s.workspaceDir)).toBe(false);
  for (const dir of cgroupOf(s.id).dirs) expect(existsSync(dir)).toBe(false);
  expect(processesWithSandboxId(s.id)).toEqual([]);
  expect(hostProcessesMentioning(s.id)).toEqual([]);
}

async function listenAnywhere(): Promise<{ server: Server; port: number }> {
  const server = createServer((sock) => sock.end("hello from the host\n"));
  await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
  const addr = server.address();
  if (addr === null || typeof addr === "string") throw new Error("no port");
  return { server, port: addr.port };
}

describe("bwrap sandbox isolation", () => {
  const root = tempRoot("isolation");
  const shared = tempRoot("shared-ro");
  let backend!: BwrapBackend;
  let proxy!: StandInProxy;

  beforeAll(async () => {
    mkdirSync(join(shared.path, "public"));
    mkdirSync(join(shared.path, "secret-db"));
    writeFileSync(join(shared.path, "public", "tool.txt"), "tool");
    writeFileSync(join(shared.path, "secret-db", "records.sqlite"), "other rollouts' records");
    chmodSync(shared.path, 0o755); // read-only paths must be readable by the (unprivileged) sandbox user
    backend = await BwrapBackend.open({ stateRoot: root.path, hidePaths: [join(shared.path, "secret-db")] });
    proxy = await startStandInProxy();
  });
  afterAll(async () => {
    await backend?.close();
    await proxy?.close();
    root.remove();
    shared.remove();
  });

  it("cannot write outside the workspace, and sees none of the host's private state", async () => {
    const s = await backend.create({ limits: LIMITS, readOnlyPaths: [shared.path] });
    const script = [
      `for p in /etc/hrl-x /usr/hrl-x /hrl-x /home/hrl-x /run/hrl-x ${shared.path}/public/hrl-x /proc/hrl-x; do`,
      '  if (echo x > "$p") 2>/dev/null; then echo "WROTE $p"; else echo "denied $p"; fi',
      "done",
      "echo ws > /workspace/ok && echo tmp > /tmp/ok && echo workspace-and-tmp-writable",
      `test -e ${root.path} && echo "SEES STATE ROOT" || echo no-state-root`,
      "test -e /root/.bashrc -o -e /root/.npm && echo 'SEES HOST HOME' || echo no-host-home",
      `cat ${shared.path}/public/tool.txt; echo`,
      `ls -A ${shared.path}/secret-db | wc -l`,
      'echo "uid=$(id -u)"',
      "cat /etc/shadow >/dev/null 2>&1 && echo 'READS SHADOW' || echo no-shadow",
    ].join("\n");
    const r = await s.exec(["sh", "-c", script]);
    expect(r.stdout).not.toContain("WROTE");
    expect(r.stdout.match(/denied/g)?.length).toBe(7);
    expect(r.stdout).toContain("workspace-and-tmp-writable");
    expect(r.stdout).toContain("no-state-root");
    expect(r.stdout).toContain("no-host-home");
    expect(r.stdout).toContain("tool\n0\n");
    // A root control plane runs sandboxes as an unprivileged host user: root-only files stay unreadable.
    expect(r.stdout).toContain(`uid=${backend.sandboxUid}`);
    if (process.getuid?.() === 0) {
      expect(backend.sandboxUid).not.toBe(0);
      expect(r.stdout).toContain("no-shadow");
    }
    expect(existsSync("/etc/hrl-x")).toBe(false);
    expect(existsSync(join(shared.path, "public", "hrl-x"))).toBe(false);
    expect((await s.readFile("ok")).toString()).toBe("ws\n");
    await s.destroy();
  });

  it("reaches the proxy and nothing else: no host ports, no external addresses, no other sandbox", async () => {
    const other = await listenAnywhere();
    const hostIp = Object.values(networkInterfaces()).flat().find((i) => i && i.family === "IPv4" && !i.internal)?.address;
    // Control: from the host, the other port is reachable, so a refusal inside is the sandbox's doing.
    expect(spawnSync("bash", ["-c", tcpProbeScript("127.0.0.1", other.port)], { encoding: "utf8" }).stdout).toContain("connected");

    const s = await backend.create({ limits: LIMITS, network: { proxy: { host: "127.0.0.1", port: proxy.port } } });
    const probes = [
      `echo "proxy: $(${tcpProbeScript("127.0.0.1", proxy.port)})"`,
      `echo "host-loopback: $(${tcpProbeScript("127.0.0.1", other.port)})"`,
      hostIp ? `echo "host-ip: $(${tcpProbeScript(hostIp, other.port)})"` : "echo 'host-ip: failed'",
      `echo "external: $(timeout 5 bash -c '${tcpProbeScript("1.1.1.1", 80)}' || echo failed)"`,
      "echo \"interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')\"",
    ].join("\n");
    const r = await s.exec(["bash", "-c", probes], { timeoutMs: 20_000 });
    expect(r.stdout).toContain("proxy: connected");
    expect(r.stdout).toContain("host-loopback: failed");
    expect(r.stdout).toContain("host-ip: failed");
    expect(r.stdout).toContain("external: failed");
    expect(r.stdout).toContain("interfaces: lo \n");
    const noBridge = await s.exec(["bash", "-c", tcpProbeScript("127.0.0.1", proxy.port)], { proxy: false });
    expect(noBridge.stdout).toContain("failed");
    // Nor through the bridge's unix socket directly: the host forwards only while an exec that uses the proxy runs.
    const viaSocket = [
      "const c = require('net').connect('/run/harnessrl/bridge/proxy.sock', () => c.write('GET /v1/sneak HTTP/1.0\\r\\n\\r\\n'));",
      "let d = ''; c.on('data', (x) => (d += x)); c.on('close', () => console.log('reply:' + d)); c.on('error', () => {});",
    ].join(" ");
    const sneak = await s.exec(["node", "-e", viaSocket], { proxy: false, timeoutMs: 20_000 });
    expect(sneak.stdout).toBe("reply:\n");
    const allowed = await s.exec(["node", "-e", viaSocket], { timeoutMs: 20_000 });
    expect(allowed.stdout).toContain("proxy-ok /v1/sneak");

    // Another sandbox listening on a port is invisible from this one.
    const a = await backend.create({ limits: LIMITS });
    const listening = a.exec(["node", "-e", "require('net').createServer().listen(45123, '127.0.0.1', () => require('fs').writeFileSync('up', '1'))"], { timeoutMs: 15_000 });
    while (!(await a.listFiles()).includes("up")) await sleep(20);
    const b = await s.exec(["bash", "-c", tcpProbeScript("127.0.0.1", 45123)]);
    expect(b.stdout).toContain("failed");
    // The execs of one sandbox share its network namespace (one long-lived bwrap per sandbox).
    const self = await a.exec(["bash", "-c", tcpProbeScript("127.0.0.1", 45123)]);
    expect(self.stdout).toContain("connected");
    await a.destroy();
    await listening;
    await s.destroy();
    other.server.close();
  });

  it("runs its exec agent as pid 2 under bubblewrap's init: what lets the agent sweep its namespace with kill(-1)", async () => {
    const s = await backend.create({ limits: LIMITS });
    const r = await s.exec(["sh", "-c", "cat /proc/1/comm; tr '\\0' ' ' < /proc/2/cmdline; echo; cut -d' ' -f4 /proc/2/stat"]);
    const [init, agent, agentParent] = r.stdout.trim().split("\n");
    expect(init).toBe("bwrap");
    expect(agent).toContain("/run/harnessrl/agent/main.cjs");
    expect(agentParent).toBe("1");
    await s.destroy();
  });

  it("mounts its exec agent as one CommonJS bundle: no ES modules for each sandbox's node to load", async () => {
    const s = await backend.create({ limits: LIMITS });
    const r = await s.exec(["sh", "-c", "ls /run/harnessrl/agent; grep -c '^import ' /run/harnessrl/agent/main.cjs; grep -c 'require(\"node:' /run/harnessrl/agent/main.cjs"]);
    const [files, imports, requires] = r.stdout.trim().split("\n");
    expect(files).toBe("main.cjs");
    expect(imports).toBe("0");
    expect(Number(requires)).toBeGreaterThanOrEqual(3); // child_process, fs, net: built-ins only
    await s.destroy();
  });

  it("contains a fork bomb with the pids limit and cleans it up", async () => {
    const s = await backend.create({ limits: { ...LIMITS, maxPids: 48 } });
    const agentOnly = cgroupOf(s.id).pids(); // bwrap and the exec agent: what an idle sandbox runs
    const r = await s.exec(["sh", "-c", "bomb() { bomb | bomb & }; bomb; sleep 2; echo after"], { timeoutMs: 10_000 });
    expect(r.pidsLimitHit).toBe(true);
    expect(cgroupOf(s.id).pids().sort()).toEqual(agentOnly.sort());
    // The sandbox stays usable once the bomb is gone.
    expect((await s.exec(["echo", "fine"])).stdout).toBe("fine\n");
    const stateDir = join(root.path, s.id);
    await s.destroy();
    nothingLeft(s, stateDir);
  });

  it("applies the CPU weight through the cpu controller when one is requested", async () => {
    const cpu = layout.controllers.cpu;
    if (!cpu) return; // no cpu controller on this host: nothing to check (the backend warned)
    const s = await backend.create({ limits: { ...LIMITS, cpuShares: 512 } });
    const dir = cgroupOf(s.id, true).paths.cpu ?? "";
    const weight = cpu.version === 1 ? readFileSync(join(dir, "cpu.shares"), "utf8") : readFileSync(join(dir, "cpu.weight"), "utf8");
    expect(Number(weight)).toBe(cpu.version === 1 ? 512 : 20);
    const running = s.exec(["sh", "-c", "echo up > up; sleep 5"], { timeoutMs: 10_000 });
    while (!(await s.listFiles()).includes("up")) await sleep(20);
    expect(readFileSync(join(dir, "cgroup.procs"), "utf8").trim().length).toBeGreaterThan(0);
    await s.destroy();
    await running;
    expect(existsSync(dir)).toBe(false);
  });

  it("kills a memory hog at the memory limit and classifies it as oomKilled", async () => {
    const s = await backend.create({ limits: { ...LIMITS, memoryBytes: 128 * 1024 * 1024 } });
    const r = await s.exec(["node", "-e", "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1));"], { timeoutMs: 30_000 });
    expect(r.oomKilled).toBe(true);
    expect(r.timedOut).toBe(false);
    expect(r.signal).toBe("SIGKILL");
    const ok = await s.exec(["true"]);
    expect(ok.oomKilled).toBe(false);
    await s.destroy();
  });

  it("kills a hang at the timeout with its whole tree (SIGTERM-immune, setsid'd and double-forked children)", async () => {
    const s = await backend.create({ limits: LIMITS });
    const agentOnly = cgroupOf(s.id).pids();
    const script = [
      "trap '' TERM",
      "(trap '' TERM; sleep 1000) &",
      "setsid sh -c \"trap '' TERM; sleep 1000\" &",
      "sh -c '(sleep 1000 &) ; sleep 1000' &",
      "sleep 1000",
    ].join("\n");
    const r = await s.exec(["sh", "-c", script], { timeoutMs: 1000 });
    expect(r.timedOut).toBe(true);
    expect(r.durationMs).toBeLessThan(10_000); // the tree sleeps 1000 s
    expect(cgroupOf(s.id).pids().sort()).toEqual(agentOnly.sort());
    expect(processesWithSandboxId(s.id)).toEqual([]);
    await s.destroy();
  });

  it("leaves nothing behind after destroy: no processes, no cgroup, no directories", async () => {
    const s = await backend.create({ limits: LIMITS, workspaceFiles: { "x.txt": "x" }, network: { proxy: { host: "127.0.0.1", port: proxy.port } } });
    const stateDir = join(root.path, s.id);
    const running = s.exec(["sh", "-c", "(sleep 1000 &); setsid sleep 1000 & echo started > started; sleep 1000"], { timeoutMs: 60_000 });
    while (!(await s.listFiles()).includes("started")) await sleep(20);
    expect(cgroupOf(s.id).pids().length).toBeGreaterThan(2);
    await s.destroy();
    await running;
    nothingLeft(s, stateDir);
  });

  it("reaps a crashed control plane's cgroups and directories", async () => {
    const crashRoot = tempRoot("crash-cg");
    onTestFinished(() => crashRoot.remove());
    const code = `
      import { registerBuiltins } from ${JSON.stringify(DIST_BUILTINS)};
      import { openSandboxBackend } from ${JSON.stringify(DIST_SANDBOX)};
      registerBuiltins();
      const b = await openSandboxBackend("bwrap", { stateRoot: ${JSON.stringify(crashRoot.path)} });
      const s = await b.create({ limits: { memoryBytes: 256 * 1024 * 1024, maxPids: 64, wallClockMs: 600000 } });
      void s.exec(["sh", "-c", "echo up > up; sleep 600"]);
      while (!(await s.listFiles()).includes("up")) await new Promise((r) => setTimeout(r, 20));
      console.log("READY " + s.id);
      setInterval(() => {}, 1000);`;
    const cp = await spawnControlPlane(code, "READY ");
    onTestFinished(() => cp.kill());
    const id = cp.line.slice("READY ".length).trim();
    const cg = cgroupOf(id);
    const existedWhileAlive = cg.dirs.every((d) => existsSync(d));
    cp.kill();
    expect(existedWhileAlive).toBe(true);
    await cp.exited;
    const next = await BwrapBackend.open({ stateRoot: crashRoot.path, pool: { size: 0 } });
    const report = await next.reapOrphans();
    expect(report.reaped).toContain(id);
    expect(report.errors).toEqual([]);
    // The crashed control plane's warm pool is reaped the same way.
    for (const reaped of report.reaped) {
      for (const d of cgroupOf(reaped, true).dirs) expect(existsSync(d)).toBe(false);
      expect(hostProcessesMentioning(reaped)).toEqual([]);
    }
    expect(readdirSync(crashRoot.path)).toEqual([]);
    await next.close();
    crashRoot.remove();
  });

  it("runs 64 concurrent sandboxed rollouts that each talk to the proxy through the bridge", async () => {
    const n = 64;
    const before = proxy.paths.length;
    const results = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const s = await backend.create({ limits: LIMITS, workspaceFiles: { "task.txt": `task ${i}` }, network: { proxy: { host: "127.0.0.1", port: proxy.port } } });
        try {
          const r = await s.exec(["bash", "-c", `${proxyGetScript(`/v1/rollout/${i}`)} > reply.txt && cat task.txt`], { timeoutMs: 60_000 });
          const reply = (await s.readFile("reply.txt")).toString();
          return { i, exitCode: r.exitCode, stdout: r.stdout, reply };
        } finally {
          await s.destroy();
        }
      }),
    );
    for (const r of results) {
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toBe(`task ${r.i}`);
      expect(r.reply).toContain(`proxy-ok /v1/rollout/${r.i}`);
    }
    expect(new Set(proxy.paths.slice(before)).size).toBe(n);
    expect(backend.live()).toEqual([]);
  });
});
