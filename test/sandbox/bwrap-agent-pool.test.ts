import { chmodSync, existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { BwrapBackend } from "../../src/sandbox/bwrap/backend.js";
import { AGENT_RESERVE } from "../../src/sandbox/bwrap/cell.js";
import { SandboxCgroup, detectCgroups } from "../../src/sandbox/cgroups.js";
import type { Sandbox } from "../../src/sandbox/types.js";
import { DIST_SANDBOX, LIMITS, hostProcessesMentioning, sleep, spawnControlPlane, tempRoot, useColdBwrapBackend } from "./helpers.js";

const layout = detectCgroups();
const cgroupOf = (id: string): SandboxCgroup => SandboxCgroup.forSandbox(layout, id, true);

function sandboxDirs(root: string): string[] {
  return readdirSync(root).filter((n) => n.startsWith("sbx_")).sort();
}

function labelsOf(root: string, id: string): Record<string, string> {
  return (JSON.parse(readFileSync(join(root, id, "state.json"), "utf8")) as { labels: Record<string, string> }).labels;
}

function nothingLeftOf(ids: string[]): void {
  for (const id of ids) {
    for (const d of cgroupOf(id).dirs) expect(existsSync(d)).toBe(false);
    expect(hostProcessesMentioning(id)).toEqual([]);
  }
}

async function heartbeatGrows(s: Sandbox, file: string, ms = 600): Promise<boolean> {
  const size = async (): Promise<number> => (await s.readFile(file).catch(() => Buffer.alloc(0))).length;
  const a = await size();
  await sleep(ms);
  return (await size()) > a;
}

/**
 * Takes a copy of the agent's output socket with pidfd_getfd (same user, so permitted) and writes garbage into it:
 * the host reads it as a broken frame stream and kills the agent.
 */
const STEAL_AGENT_STDOUT = [
  "import ctypes, os, time",
  "libc = ctypes.CDLL(None, use_errno=True)",
  "pidfd = libc.syscall(434, os.getppid(), 0)",
  "fd = libc.syscall(438, pidfd, 1, 0)",
  "assert fd >= 0, os.strerror(ctypes.get_errno())",
  "os.write(fd, b'garbage that is not a frame, not at all')",
  "time.sleep(30)",
].join("\n");

describe("bwrap exec agent", () => {
  const bwrap = useColdBwrapBackend("agent");

  it("runs many execs through one agent, and starts a new one after it was killed", async () => {
    const s = await bwrap.backend.create({ limits: LIMITS });
    const agentPids = cgroupOf(s.id).pids();
    for (let i = 0; i < 5; i++) expect((await s.exec(["echo", String(i)])).stdout).toBe(`${i}\n`);
    expect(cgroupOf(s.id).pids().sort()).toEqual(agentPids.sort()); // same agent throughout, nothing left over

    // `pkill node` inside must not take the agent down: it ignores SIGTERM.
    const term = await s.exec(["sh", "-c", "kill -TERM $PPID; sleep 0.2; echo survived"]);
    expect(term).toMatchObject({ exitCode: 0, stdout: "survived\n" });

    // A command SIGKILLs its agent: the exec ends with everything in the sandbox; the next exec starts a new agent.
    // (Output the agent had not relayed yet is lost with it.)
    const killed = await s.exec(["sh", "-c", "kill -KILL $PPID; sleep 30"], { timeoutMs: 20_000 });
    expect(killed).toMatchObject({ exitCode: null, signal: "SIGKILL", timedOut: false });
    expect(killed.stderr).toContain("exec agent was killed");
    expect(killed.durationMs).toBeLessThan(10_000);
    const after = await s.exec(["echo", "back"]);
    expect(after).toMatchObject({ exitCode: 0, stdout: "back\n" });
    const newAgent = cgroupOf(s.id).pids();
    expect(newAgent.some((p) => agentPids.includes(p))).toBe(false);

    // A cgroup-wide kill (the fallback after a stuck timeout) also only costs the next exec an agent start.
    cgroupOf(s.id).killAll();
    expect((await s.exec(["echo", "again"])).stdout).toBe("again\n");
    await s.destroy();
  });

  it("starts the next exec's agent only after a kill sweep (the stuck-timeout fallback) has drained the sandbox", async () => {
    const s = await bwrap.backend.create({ limits: { ...LIMITS, memoryBytes: 1536 * 1024 * 1024 } });
    try {
      const cell = (s as unknown as { cell: { killAll(): Promise<void> } }).cell;
      for (let i = 0; i < 3; i++) {
        // Processes holding much memory take a while to exit, so the sweep drains for a while, as on a loaded machine.
        const hogs = s.exec(["sh", "-c", `for i in 1 2 3; do python3 -c "b = bytearray(300 << 20); open('hog-$i', 'w').close(); import time; time.sleep(60)" & done; wait`], { timeoutMs: 60_000 });
        for (let t = 0; t < 200 && (await s.listFiles()).filter((f) => f.startsWith("hog-")).length < 3; t++) await sleep(50);
        // The fallback as a timed-out exec whose agent did not answer runs it, not awaited by the next exec. An agent
        // started while the sweep still drained the cgroup died with it ("did not start (exit SIGKILL)").
        const sweep = cell.killAll();
        expect(await s.exec(["echo", String(i)])).toMatchObject({ exitCode: 0, stdout: `${i}\n` });
        await sweep;
        await hogs;
        await s.exec(["sh", "-c", "rm -f hog-*"]);
      }
    } finally {
      await s.destroy();
    }
  });

  it("refuses a command the agent's control stream (pidfd_getfd: EPERM under the seccomp filter); the sandbox goes on", async () => {
    // Commands run as the agent's user: without the filter, pidfd_getfd hands them the socket the agent sends its
    // frames on (the host then kills the agent as a broken stream and scores the exec as killed, never as an
    // InfraError a rollout could hide behind; that path stays in agent-process.ts as a second line).
    const s = await bwrap.backend.create({ limits: LIMITS });
    const r = await s.exec(["python3", "-c", STEAL_AGENT_STDOUT], { timeoutMs: 20_000 });
    expect(r).toMatchObject({ exitCode: 1, signal: null, timedOut: false });
    expect(r.stderr).toMatch(/AssertionError: Operation not permitted/);
    expect(r.stderr).not.toContain("exec agent ended");
    expect((await s.exec(["echo", "back"])).stdout).toBe("back\n");
    await s.destroy();
  });

  it("lets the OOM killer take the sandbox's commands, not its agent", async () => {
    // Six ~25 MB processes in a 96 MiB sandbox: each is smaller than the agent (node), which the kernel would pick
    // first by size; with the commands' oom_score_adj raised it kills commands and the agent lives on.
    const s = await bwrap.backend.create({ limits: { ...LIMITS, memoryBytes: 96 * 1024 * 1024 } });
    const agent = cgroupOf(s.id).pids();
    const script = "for i in 1 2 3 4 5 6; do python3 -c 'b = b\"x\" * (20 << 20); import time; time.sleep(4)' & done; wait; echo finished";
    const r = await s.exec(["sh", "-c", script], { timeoutMs: 30_000 });
    // The shell is a command too (same oom_score_adj): while a child is still a forked, not yet exec'd copy of it, the
    // two score alike and the kernel may take the shell (CI saw it once under load). Either way no agent dies.
    expect(r.oomKilled).toBe(true);
    if (r.exitCode === 0) expect(r.stdout).toBe("finished\n");
    else expect(r).toMatchObject({ exitCode: null, signal: "SIGKILL", timedOut: false });
    expect(r.stderr).not.toContain("exec agent");
    const still = cgroupOf(s.id).pids();
    expect(agent.every((p) => still.includes(p))).toBe(true);
    expect(await s.exec(["echo", "after"])).toMatchObject({ exitCode: 0, stdout: "after\n" });
    await s.destroy();
  });

  it("relays a large output without charging it to the sandbox's memory", async () => {
    // 300 MB through the agent in a sandbox allowed 32 MiB: the agent must not queue or retain what it relayed.
    const s = await bwrap.backend.create({ limits: { ...LIMITS, memoryBytes: 32 * 1024 * 1024 } });
    const r = await s.exec(["sh", "-c", "head -c 300000000 /dev/zero; echo END"], { stdoutLimit: 1000, timeoutMs: 50_000 });
    expect(r).toMatchObject({ exitCode: 0, oomKilled: false, stdoutBytes: 300_000_004, stdoutTruncated: true });
    expect(r.stdout.endsWith("END\n")).toBe(true);
    await s.destroy();
  });

  it("keeps concurrent execs apart: a timeout kills only its own tree, orphaned setsid'd children included", async () => {
    const s = await bwrap.backend.create({ limits: LIMITS });
    // The loop runs in a session of its own, orphaned (its parent exits): only the exec's marker still finds it.
    const stray = "setsid sh -c \"(trap '' TERM; while :; do echo x >> beat-a; sleep 0.05; done) &\"; sleep 100";
    const a = s.exec(["sh", "-c", stray], { timeoutMs: 1000 });
    const b = s.exec(["sh", "-c", "while :; do echo y >> beat-b; sleep 0.05; done"], { timeoutMs: 4000 });
    const ra = await a;
    expect(ra.timedOut).toBe(true);
    expect(await heartbeatGrows(s, "beat-a")).toBe(false);
    expect(await heartbeatGrows(s, "beat-b")).toBe(true); // the other exec runs on
    const rb = await b;
    expect(rb.timedOut).toBe(true);
    expect(await heartbeatGrows(s, "beat-b")).toBe(false);

    // Two execs that end normally, side by side.
    const [x, y] = await Promise.all([s.exec(["sh", "-c", "sleep 0.3; echo x"]), s.exec(["cat"], { stdin: "y" })]);
    expect([x.stdout, y.stdout]).toEqual(["x\n", "y"]);
    await s.destroy();
  });
});

describe("bwrap warm pool", () => {
  const root = tempRoot("pool");
  const shared = tempRoot("pool-ro");
  let backend!: BwrapBackend;

  beforeAll(async () => {
    writeFileSync(join(shared.path, "tool.txt"), "tool");
    chmodSync(shared.path, 0o755);
    backend = await BwrapBackend.open({ stateRoot: root.path, pool: { size: 2 } });
    await backend.poolSettled();
  });
  afterAll(async () => {
    await backend?.close();
    root.remove();
    shared.remove();
  });

  it("hands out pre-started sandboxes, refills, and serves other mounts after it has seen them", async () => {
    const warm = sandboxDirs(root.path);
    expect(warm).toHaveLength(2);
    for (const id of warm) expect(labelsOf(root.path, id)).toEqual({ pool: "warm" });
    expect(backend.poolStats()).toMatchObject({ size: 2, idle: 2, hits: 0, misses: 0 });

    const s = await backend.create({ limits: LIMITS, workspaceFiles: { "task.md": "pooled" }, labels: { rollout: "r1" } });
    expect(warm).toContain(s.id);
    expect(labelsOf(root.path, s.id)).toEqual({ rollout: "r1" });
    expect((await s.exec(["cat", "task.md"])).stdout).toBe("pooled");
    await backend.poolSettled();
    expect(backend.poolStats()).toMatchObject({ idle: 2, hits: 1, misses: 0 });
    await s.destroy();

    // Other mounts: the first create is cold, then the pool keeps a share of its cells with those mounts.
    const ro = { limits: LIMITS, readOnlyPaths: [shared.path] };
    const cold = await backend.create(ro);
    expect(backend.poolStats().misses).toBe(1);
    expect((await cold.exec(["cat", join(shared.path, "tool.txt")])).stdout).toBe("tool");
    await cold.destroy();
    await backend.poolSettled();
    const hot = await backend.create(ro);
    expect(backend.poolStats()).toMatchObject({ hits: 2, misses: 1 });
    expect((await hot.exec(["cat", join(shared.path, "tool.txt")])).stdout).toBe("tool");
    await hot.destroy();
    const plain = await backend.create({ limits: LIMITS });
    expect((await plain.exec(["sh", "-c", `test -e ${shared.path} && echo visible || echo absent`])).stdout).toBe("absent\n");
    await plain.destroy();
  });

  it("gives a pooled sandbox its own limits", async () => {
    await backend.poolSettled();
    const small = await backend.create({ limits: { ...LIMITS, memoryBytes: 128 * 1024 * 1024, maxPids: 48, cpuShares: 512 } });
    expect(backend.poolStats().hits).toBeGreaterThan(0);
    const cg = cgroupOf(small.id);
    if (cg.paths.pids) expect(Number(readFileSync(join(cg.paths.pids, "pids.max"), "utf8"))).toBe(48 + AGENT_RESERVE.pids);
    if (layout.controllers.cpu?.version === 1 && cg.paths.cpu) expect(Number(readFileSync(join(cg.paths.cpu, "cpu.shares"), "utf8"))).toBe(512);
    const hog = await small.exec(["node", "-e", "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1));"], { timeoutMs: 30_000 });
    expect(hog).toMatchObject({ oomKilled: true, timedOut: false, signal: "SIGKILL" });
    await small.destroy();

    // A larger limit than the pool's idle one: 200 MB fit in a 512 MiB sandbox.
    await backend.poolSettled();
    const large = await backend.create({ limits: { ...LIMITS, memoryBytes: 512 * 1024 * 1024 } });
    const fits = await large.exec(["node", "-e", "const a = []; for (let i = 0; i < 200; i++) a.push(Buffer.alloc(1 << 20, 1)); console.log('fits')"], { timeoutMs: 30_000 });
    expect(fits).toMatchObject({ exitCode: 0, stdout: "fits\n", oomKilled: false });
    await large.destroy();
  });

  it("leaves no pooled sandbox behind after close()", async () => {
    const own = tempRoot("pool-close");
    onTestFinished(() => own.remove());
    const b = await BwrapBackend.open({ stateRoot: own.path, pool: { size: 3 } });
    await b.poolSettled();
    const ids = sandboxDirs(own.path);
    expect(ids).toHaveLength(3);
    const s = await b.create({ limits: LIMITS });
    void s.exec(["sleep", "100"]);
    await b.close(); // also while a refill may be starting
    expect(sandboxDirs(own.path)).toEqual([]);
    nothingLeftOf([...ids, s.id]);
  });

  it("reaps a SIGKILLed control plane's warm pool", async () => {
    const crashRoot = tempRoot("pool-crash");
    onTestFinished(() => crashRoot.remove());
    const code = `
      import { BwrapBackend } from ${JSON.stringify(DIST_SANDBOX)};
      const b = await BwrapBackend.open({ stateRoot: ${JSON.stringify(crashRoot.path)}, pool: { size: 3 } });
      await b.poolSettled();
      console.log("READY");
      setInterval(() => {}, 1000);`;
    const cp = await spawnControlPlane(code, "READY");
    onTestFinished(() => cp.kill());
    const ids = sandboxDirs(crashRoot.path);
    expect(ids).toHaveLength(3);
    for (const id of ids) expect(hostProcessesMentioning(id).length).toBeGreaterThan(0);
    cp.kill();
    await cp.exited;
    const next = await BwrapBackend.open({ stateRoot: crashRoot.path, pool: { size: 0 } });
    const report = await next.reapOrphans();
    expect(report.reaped.sort()).toEqual(ids);
    expect(report.errors).toEqual([]);
    expect(sandboxDirs(crashRoot.path)).toEqual([]);
    nothingLeftOf(ids);
    await next.close();
  });

  it("removes a dead control plane's mount directories even when its state root is gone (each names its owner)", async () => {
    const crashRoot = tempRoot("pool-crash-mounts");
    onTestFinished(() => crashRoot.remove());
    const code = `
      import { BwrapBackend } from ${JSON.stringify(DIST_SANDBOX)};
      const b = await BwrapBackend.open({ stateRoot: ${JSON.stringify(crashRoot.path)}, pool: { size: 2 } });
      await b.poolSettled();
      console.log("READY");
      setInterval(() => {}, 1000);`;
    const cp = await spawnControlPlane(code, "READY");
    onTestFinished(() => cp.kill());
    const mountDirs = sandboxDirs(crashRoot.path).map((id) => (JSON.parse(readFileSync(join(crashRoot.path, id, "state.json"), "utf8")) as { mountDir: string }).mountDir);
    expect(mountDirs).toHaveLength(2);
    for (const d of mountDirs) expect(existsSync(join(d, "workspace"))).toBe(true);
    cp.kill();
    await cp.exited;
    crashRoot.remove(); // the state directories go first: only the mount directories' owner files are left
    const other = tempRoot("pool-crash-mounts-next");
    onTestFinished(() => other.remove());
    const next = await BwrapBackend.open({ stateRoot: other.path, pool: { size: 0 } });
    const report = await next.reapOrphans();
    expect(report.errors).toEqual([]);
    for (const d of mountDirs) expect(existsSync(d)).toBe(false);
    // A live backend's mount directories are left alone.
    const live = await next.create({ limits: LIMITS });
    await next.reapOrphans();
    expect(existsSync(live.workspaceDir)).toBe(true);
    await next.close();
  });

  it("rejects a bad pool size", async () => {
    await expect(BwrapBackend.open({ stateRoot: root.path, pool: { size: -1 } })).rejects.toThrow(/pool/);
  });
});
