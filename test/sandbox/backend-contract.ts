import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { processesWithSandboxId } from "../../src/sandbox/state.js";
import type { Sandbox, SandboxBackend } from "../../src/sandbox/types.js";
import { DIST_BUILTINS, DIST_SANDBOX, LIMITS, isAlive, proxyGetScript, sleep, spawnControlPlane, startStandInProxy, tempRoot } from "./helpers.js";
import type { StandInProxy } from "./helpers.js";

export type OpenBackend = (stateRoot: string) => Promise<SandboxBackend>;

/** Reads a heartbeat file twice, some time apart: a live writer makes it grow. */
async function heartbeatGrows(sandbox: Sandbox, file: string, ms = 600): Promise<boolean> {
  const size = async (): Promise<number> => (await sandbox.readFile(file).catch(() => Buffer.alloc(0))).length;
  const a = await size();
  await sleep(ms);
  return (await size()) > a;
}

/** Shell snippet: a child and a grandchild that ignore SIGTERM and append to `file` every 50 ms. */
function stubbornHeartbeat(file: string): string {
  return `trap '' TERM; (trap '' TERM; while :; do echo x >> ${file}; sleep 0.05; done) & (trap '' TERM; sh -c 'while :; do sleep 1; done') & wait`;
}

/**
 * The shared contract every sandbox backend passes (`bwrap`, `local-unsafe`). `name` must be registered in
 * src/sandbox/index.ts: the crash scenario opens it from a separate control-plane process. `variant` names a
 * configuration when one backend runs the suite more than once (bwrap: cold starts and the warm pool).
 */
export function backendContract(name: string, open: OpenBackend, variant = ""): void {
  describe(`sandbox backend contract: ${name}${variant ? ` (${variant})` : ""}`, () => {
    const root = tempRoot(`contract-${name}`);
    let backend!: SandboxBackend;
    let proxy!: StandInProxy;
    const create = (extra: Partial<Parameters<SandboxBackend["create"]>[0]> = {}): Promise<Sandbox> =>
      backend.create({ limits: LIMITS, ...extra });

    beforeAll(async () => {
      backend = await open(root.path);
      proxy = await startStandInProxy();
    });
    afterAll(async () => {
      await backend?.close();
      await proxy?.close();
      root.remove();
    });

    it("seeds the workspace from a file map (strings and bytes) and from a directory", async () => {
      const s = await create({ workspaceFiles: { "task.md": "fix the bug", "src/data.bin": new Uint8Array([0, 1, 2, 255]) } });
      const r = await s.exec(["sh", "-c", "cat task.md; echo; od -An -tu1 src/data.bin"]);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain("fix the bug");
      expect(r.stdout.trim().split(/\s+/).slice(-4)).toEqual(["0", "1", "2", "255"]);
      await s.destroy();

      const dir = join(root.path, "seed-dir");
      mkdirSync(join(dir, "nested"), { recursive: true });
      writeFileSync(join(dir, "nested", "hello.txt"), "from a directory");
      const d = await create({ workspaceFiles: dir });
      expect((await d.exec(["cat", "nested/hello.txt"])).stdout).toBe("from a directory");
      expect(await d.listFiles()).toEqual(["nested/hello.txt"]);
      await d.destroy();
    });

    it("reports stdout, stderr, exit codes and signals; passes argv verbatim and stdin", async () => {
      const s = await create();
      const r = await s.exec(["sh", "-c", 'printf "%s|" "$@"; echo oops >&2; exit 42', "sh", "a b", "'q'", "$HOME"]);
      expect(r).toMatchObject({ exitCode: 42, stdout: "a b|'q'|$HOME|", stderr: "oops\n", timedOut: false, oomKilled: false });
      const c = await s.exec(["cat"], { stdin: "piped input" });
      expect(c.stdout).toBe("piped input");
      const k = await s.exec(["sh", "-c", "kill -9 $$"]);
      expect(k.signal).toBe("SIGKILL");
      const missing = await s.exec(["definitely-not-a-program-xyz"]);
      expect(missing.exitCode).toBe(127);
      expect(missing.stderr).toContain("definitely-not-a-program-xyz");
      await s.destroy();
    });

    it("bounds captured output and flags truncation", async () => {
      const s = await create();
      const r = await s.exec(["sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a; echo END"], { stdoutLimit: 1000, stderrLimit: 10 });
      expect(r.stdoutTruncated).toBe(true);
      expect(r.stdoutBytes).toBe(300004);
      expect(r.stdout.length).toBeLessThan(1100);
      expect(r.stdout.startsWith("aaaa")).toBe(true);
      expect(r.stdout.endsWith("END\n")).toBe(true);
      expect(r.stderrTruncated).toBe(false);
      await s.destroy();
    });

    it("layers sandbox env, exec env and its own variables; HOME is private and writable", async () => {
      const s = await create({ env: { TASK: "t1", SHARED: "sandbox" } });
      const r = await s.exec(["sh", "-c", 'echo "$TASK $SHARED $EXTRA"; echo "$HOME"; echo "$HARNESSRL_SANDBOX_ID"; echo cfg > "$HOME/.config-test"'], { env: { SHARED: "exec", EXTRA: "e" } });
      const [line, home, id] = r.stdout.split("\n");
      expect(line).toBe("t1 exec e");
      expect(home).toBe(s.paths.home);
      expect(id).toBe(s.id);
      expect((await s.readFile(".config-test", { root: "home" })).toString()).toBe("cfg\n");
      expect(existsSync(join(s.homeDir, ".config-test"))).toBe(true);
      await s.destroy();
    });

    it("kills the whole tree at the timeout, including children that ignore SIGTERM", async () => {
      const s = await create();
      const started = Date.now();
      const r = await s.exec(["sh", "-c", stubbornHeartbeat("beat")], { timeoutMs: 800 });
      expect(r.timedOut).toBe(true);
      expect(Date.now() - started).toBeLessThan(10_000); // generous: 2 shared cores; the tree itself would never end
      expect((await s.readFile("beat")).length).toBeGreaterThan(0);
      expect(await heartbeatGrows(s, "beat")).toBe(false);
      await s.destroy();
    });

    it("enforces the sandbox's wall-clock budget across execs", async () => {
      const s = await create({ limits: { ...LIMITS, wallClockMs: 1200 } });
      const r = await s.exec(["sleep", "30"]);
      expect(r.timedOut).toBe(true);
      expect(r.durationMs).toBeLessThan(10_000); // the command sleeps 30 s
      const after = await s.exec(["true"]);
      expect(after.timedOut).toBe(true);
      await s.destroy();
    });

    it("reads, writes and lists files host-side, confined to the sandbox", async () => {
      const s = await create();
      await s.writeFile("verifier/check.sh", "#!/bin/sh\necho verified\n", { mode: 0o755 });
      expect((await s.exec(["./verifier/check.sh"])).stdout).toBe("verified\n");
      await s.exec(["sh", "-c", "mkdir -p out && echo result > out/r.txt && ln -s /etc/passwd out/leak && ln -s / out/rootdir"]);
      expect((await s.readFile("out/r.txt")).toString()).toBe("result\n");
      expect(await s.listFiles()).toEqual(["out/r.txt", "verifier/check.sh"]);
      expect(await s.listFiles("out")).toEqual(["out/r.txt"]);
      await expect(s.readFile("../state.json")).rejects.toBeInstanceOf(UserError);
      await expect(s.readFile("/etc/passwd")).rejects.toBeInstanceOf(UserError);
      await expect(s.readFile("out/leak")).rejects.toThrow(); // planted symlink is not followed
      await expect(s.writeFile("out/rootdir/tmp/escape", "x")).rejects.toBeInstanceOf(UserError);
      await expect(s.writeFile("out/leak", "x")).rejects.toThrow();
      // A planted FIFO (e.g. where a verifier file goes) fails the write at once instead of blocking it for ever.
      await s.exec(["mkfifo", "out/pipe"]);
      await expect(s.writeFile("out/pipe", "x")).rejects.toThrow();
      expect((await s.readFile("out/pipe")).length).toBe(0);
      await s.destroy();
    });

    it("reaches the proxy through HARNESSRL_PROXY_URL", async () => {
      const s = await create({ network: { proxy: { host: "127.0.0.1", port: proxy.port } } });
      expect(s.proxyUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const r = await s.exec(["bash", "-c", proxyGetScript(`/v1/ping?sandbox=${s.id}`)], { timeoutMs: 20_000 });
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain(`proxy-ok /v1/ping?sandbox=${s.id}`);
      expect(proxy.paths).toContain(`/v1/ping?sandbox=${s.id}`);
      const n = await s.exec(["node", "-e", "fetch(process.env.HARNESSRL_PROXY_URL + '/v1/models').then(r => r.text()).then(t => console.log(t))"], { timeoutMs: 20_000 });
      expect(n.stdout).toContain("proxy-ok /v1/models");
      const off = await s.exec(["sh", "-c", "echo ${HARNESSRL_PROXY_URL:-unset}"], { proxy: false });
      expect(off.stdout).toBe("unset\n");
      await s.destroy();
    });

    it("destroy is idempotent and complete, even with a command still running", async () => {
      const s = await create({ workspaceFiles: { "a.txt": "a" } });
      const running = s.exec(["sh", "-c", stubbornHeartbeat("beat")], { timeoutMs: 60_000 });
      await sleep(400);
      const stateDir = join(root.path, s.id);
      expect(existsSync(stateDir)).toBe(true);
      await Promise.all([s.destroy(), s.destroy()]);
      await s.destroy();
      const r = await running;
      expect(r.exitCode === 0).toBe(false);
      expect(existsSync(stateDir)).toBe(false);
      expect(existsSync(s.workspaceDir)).toBe(false);
      expect(backend.live()).not.toContain(s);
      await expect(s.exec(["true"])).rejects.toBeInstanceOf(UserError);

      // Destroy racing an exec that is still starting: the exec ends promptly instead of running to completion.
      const t = await create();
      const racing = t.exec(["sleep", "30"], { timeoutMs: 60_000 });
      await t.destroy();
      const raced = await racing;
      expect(raced.durationMs).toBeLessThan(10_000);
      expect(raced.timedOut).toBe(false);
      expect(processesWithSandboxId(t.id)).toEqual([]);
    });

    it("rejects invalid options with a clear error", async () => {
      await expect(backend.create({ limits: { memoryBytes: 10, maxPids: 1, wallClockMs: -1 } })).rejects.toThrow(/invalid sandbox create options.*memoryBytes/);
      await expect(backend.create({ limits: LIMITS, workspaceFiles: { "../escape": "x" } })).rejects.toBeInstanceOf(UserError);
      const s = await create();
      await expect(s.exec([])).rejects.toThrow(/argv must name a program/);
      await s.destroy();
    });

    it("reaps what a SIGKILLed control plane left behind", async () => {
      const crashRoot = tempRoot(`crash-${name}`);
      onTestFinished(() => crashRoot.remove());
      const code = `
        import { registerBuiltins } from ${JSON.stringify(DIST_BUILTINS)};
        import { openSandboxBackend } from ${JSON.stringify(DIST_SANDBOX)};
        registerBuiltins();
        const b = await openSandboxBackend(${JSON.stringify(name)}, { stateRoot: ${JSON.stringify(crashRoot.path)} });
        const s = await b.create({ limits: { memoryBytes: 256 * 1024 * 1024, maxPids: 64, wallClockMs: 600000 } });
        void s.exec(["sh", "-c", "setsid sleep 600 & echo $! > pid; sleep 600"]);
        while (!(await s.listFiles()).includes("pid")) await new Promise((r) => setTimeout(r, 20));
        console.log("READY " + s.id + " " + s.workspaceDir);
        setInterval(() => {}, 1000);`;
      const cp = await spawnControlPlane(code, "READY ");
      onTestFinished(() => cp.kill());
      const [id = "", workspaceDir = ""] = cp.line.slice("READY ".length).trim().split(" ");
      cp.kill();
      await cp.exited;
      expect(isAlive(cp.pid)).toBe(false);
      expect(existsSync(join(crashRoot.path, id))).toBe(true);
      const next = await open(crashRoot.path);
      const report = await next.reapOrphans();
      expect(report.reaped).toContain(id);
      expect(report.errors).toEqual([]);
      expect(existsSync(join(crashRoot.path, id))).toBe(false);
      expect(existsSync(workspaceDir)).toBe(false); // bwrap keeps it apart from the state directory
      expect(processesWithSandboxId(id)).toEqual([]);
      expect(await next.reapOrphans()).toMatchObject({ reaped: [] });
      await next.close();
      crashRoot.remove();
    });

    it("cleans up on SIGTERM of the control plane without needing the reaper", async () => {
      const termRoot = tempRoot(`term-${name}`);
      onTestFinished(() => termRoot.remove());
      const code = `
        import { registerBuiltins } from ${JSON.stringify(DIST_BUILTINS)};
        import { openSandboxBackend } from ${JSON.stringify(DIST_SANDBOX)};
        registerBuiltins();
        const b = await openSandboxBackend(${JSON.stringify(name)}, { stateRoot: ${JSON.stringify(termRoot.path)} });
        const s = await b.create({ limits: { memoryBytes: 256 * 1024 * 1024, maxPids: 64, wallClockMs: 600000 } });
        void s.exec(["sh", "-c", "echo up > up; sleep 600"]);
        while (!(await s.listFiles()).includes("up")) await new Promise((r) => setTimeout(r, 20));
        console.log("READY " + s.id + " " + s.workspaceDir);
        setInterval(() => {}, 1000);`;
      const cp = await spawnControlPlane(code, "READY ");
      onTestFinished(() => cp.kill());
      const [id = "", workspaceDir = ""] = cp.line.slice("READY ".length).trim().split(" ");
      expect(existsSync(join(termRoot.path, id))).toBe(true);
      process.kill(cp.pid, "SIGTERM");
      for (let i = 0; i < 100 && isAlive(cp.pid); i++) await sleep(50);
      expect(isAlive(cp.pid)).toBe(false);
      expect(existsSync(join(termRoot.path, id))).toBe(false);
      expect(existsSync(workspaceDir)).toBe(false);
      expect(processesWithSandboxId(id)).toEqual([]);
      termRoot.remove();
    });

    it("leaves nothing behind when SIGTERM lands while sandboxes are being created and destroyed", async () => {
      // A pool refilling while a run is stopped: creates and destroys in flight at the moment of the signal.
      for (const delayMs of [0, 40, 150]) {
        const churnRoot = tempRoot(`churn-${name}-${delayMs}`);
        onTestFinished(() => churnRoot.remove());
        const code = `
          import { registerBuiltins } from ${JSON.stringify(DIST_BUILTINS)};
          import { openSandboxBackend } from ${JSON.stringify(DIST_SANDBOX)};
          registerBuiltins();
          const b = await openSandboxBackend(${JSON.stringify(name)}, { stateRoot: ${JSON.stringify(churnRoot.path)} });
          const limits = { memoryBytes: 256 * 1024 * 1024, maxPids: 64, wallClockMs: 600000 };
          const churn = async () => { for (let i = 0; i < 200; i++) await (await b.create({ limits })).destroy(); };
          await (await b.create({ limits })).destroy();
          console.log("READY");
          for (let k = 0; k < 4; k++) void churn();
          setInterval(() => {}, 1000);`;
        const cp = await spawnControlPlane(code, "READY");
        onTestFinished(() => cp.kill());
        await sleep(delayMs);
        process.kill(cp.pid, "SIGTERM");
        for (let i = 0; i < 100 && isAlive(cp.pid); i++) await sleep(50);
        expect(isAlive(cp.pid)).toBe(false);
        expect(readdirSync(churnRoot.path).filter((e) => e.startsWith("sbx_")), `SIGTERM after ${delayMs} ms of churn`).toEqual([]);
        churnRoot.remove();
      }
    });

    it("leaves live control planes' sandboxes alone when reaping", async () => {
      const s = await create();
      const report = await backend.reapOrphans();
      expect(report.reaped).not.toContain(s.id);
      expect((await s.exec(["true"])).exitCode).toBe(0);
      await s.destroy();
    });
  });
}
