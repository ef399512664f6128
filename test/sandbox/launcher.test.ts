import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { Launcher, launcherScript } from "../../src/sandbox/launcher/client.js";
import type { LaunchExit, Launched } from "../../src/sandbox/launcher/types.js";
import { tempRoot } from "./helpers.js";
import { killChild } from "../../src/core/kill-child.js";

const script = launcherScript();
if (!script) throw new Error("the launcher is not built (npm run build)");

function sh(launcher: Launcher, command: string, fd3?: Buffer): { launched: Launched; output: () => string } {
  const launched = launcher.launch({ file: "/bin/sh", args: ["-c", command], cwd: "/", env: { PATH: "/usr/bin:/bin" }, ...(fd3 ? { fd3 } : {}) });
  const chunks: Buffer[] = [];
  launched.onOutput((c) => chunks.push(Buffer.from(c)));
  return { launched, output: () => Buffer.concat(chunks).toString("utf8") };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

// One suite for both ways of starting a sandbox's launch chain: they must be indistinguishable to the agent's host side.
describe.each([
  ["through the launcher process", () => new Launcher(script)],
  ["spawned directly by the control plane", () => new Launcher(null)],
])("sandbox launch chains started %s", (_name, make) => {
  it("delivers stdin, all of stdout (also what was written before the channel reached the control plane), the exit and stderr's tail", async () => {
    const launcher = make();
    onTestFinished(() => launcher.close());
    const { launched, output } = sh(launcher, "echo early; read x; echo got $x; echo oops >&2; exit 3");
    launched.write(Buffer.from("hello\n"));
    const exit: LaunchExit = await launched.exited;
    expect(output()).toBe("early\ngot hello\n");
    expect(exit).toEqual({ code: 3, signal: null, diagnostics: "oops\n" });
  });

  it("hands the process its fd 3 bytes (bwrap's seccomp filter) and reports a signal death", async () => {
    const launcher = make();
    onTestFinished(() => launcher.close());
    const filter = Buffer.from(Array.from({ length: 300 }, (_, i) => i % 251));
    const { launched, output } = sh(launcher, "od -An -v -tu1 <&3 | tr -s ' \\n' ' '; kill -9 $$", filter);
    const exit = await launched.exited;
    expect(output().trim().split(" ").map(Number)).toEqual([...filter]);
    expect(exit.signal).toBe("SIGKILL");
  });

  it("starts each chain in a session of its own: a chain that kills its own process group (kill 0) reaches only itself", async () => {
    const launcher = make();
    onTestFinished(() => launcher.close());
    const ours = readFileSync("/proc/self/stat", "utf8");
    const [pgrp = "", session = ""] = ours.slice(ours.lastIndexOf(")") + 2).split(" ").slice(2, 4);
    // Prints its group and session; signals its group only when that group is not ours (a failure must not kill the run).
    const { launched, output } = sh(launcher, `set -- $(cut -d' ' -f5,6 /proc/$$/stat); echo "$1 $2"; [ "$1" != ${pgrp} ] && [ "$2" != ${session} ] && kill -9 0`);
    const exit = await launched.exited;
    const [chainGroup, chainSession] = output().trim().split(" ").map(Number);
    expect(chainGroup).not.toBe(Number(pgrp));
    expect(chainSession).not.toBe(Number(session));
    expect(exit.signal).toBe("SIGKILL");
  });

  it("kills a process on request, and many run at once without mixing their channels", async () => {
    const launcher = make();
    onTestFinished(() => launcher.close());
    const sleeper = sh(launcher, "exec sleep 60");
    const many = Array.from({ length: 12 }, (_, i) => sh(launcher, `read x; echo "$x-${i}"`));
    many.forEach((m, i) => m.launched.write(Buffer.from(`n${i}\n`)));
    const exits = await Promise.all(many.map((m) => m.launched.exited));
    expect(many.map((m) => m.output())).toEqual(many.map((_, i) => `n${i}-${i}\n`));
    expect(exits.every((e) => e.code === 0)).toBe(true);
    sleeper.launched.kill();
    expect((await sleeper.launched.exited).signal).toBe("SIGKILL");
    sleeper.launched.write(Buffer.from("ignored after the end\n")); // no throw, nothing sent
  });
});

describe("the sandbox launcher process", () => {
  it("serves from its own small process, and a launcher that dies ends its processes' reports instead of leaving them pending", async () => {
    const launcher = new Launcher(script);
    onTestFinished(() => launcher.close());
    const first = sh(launcher, "exec sleep 60");
    expect(launcher.external).toBe(true);
    const pid = launcher.pid!;
    expect(pid).not.toBe(process.pid);
    process.kill(pid, "SIGKILL");
    const exit = await first.launched.exited;
    expect(exit.code).toBeNull();
    expect(exit.diagnostics).toContain("launcher");
    // The next launch starts a new launcher.
    const next = sh(launcher, "echo again");
    expect((await next.launched.exited).code).toBe(0);
    expect(next.output()).toBe("again\n");
    expect(launcher.pid).not.toBe(pid);
  });

  it("never keeps the control plane alive once its processes have ended, and dies with a SIGKILLed control plane, taking its processes along", async () => {
    const root = tempRoot("launcher");
    onTestFinished(() => root.remove());
    const client = new URL("../../dist/sandbox/launcher/client.js", import.meta.url).pathname;
    const controlPlane = join(root.path, "control-plane.mjs");
    // Prints the launcher's pid and a long sleeper's; with "exit" as argument it waits for a short command and returns.
    writeFileSync(controlPlane, `
import { Launcher, launcherScript } from ${JSON.stringify(client)};
const launcher = new Launcher(launcherScript());
const short = launcher.launch({ file: "/bin/sh", args: ["-c", "exit 0"], cwd: "/", env: {} });
short.onOutput(() => {});
await short.exited;
if (process.argv[2] === "exit") { console.log("done"); } else {
  const long = launcher.launch({ file: "/bin/sh", args: ["-c", "echo $$; exec sleep 60"], cwd: "/", env: { PATH: "/usr/bin:/bin" } });
  long.onOutput((c) => console.log(JSON.stringify({ launcher: launcher.pid, sleeper: Number(String(c).trim()) })));
}
`);
    const run = (arg: string): Promise<{ code: number | null; out: string; child: ReturnType<typeof spawn> }> => {
      const child = spawn(process.execPath, [controlPlane, arg], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString()));
      return new Promise((resolve) => child.on("close", (code) => resolve({ code, out, child })));
    };
    const ended = await run("exit");
    expect(ended).toMatchObject({ code: 0, out: "done\n" });

    const child = spawn(process.execPath, [controlPlane, "hold"], { stdio: ["ignore", "pipe", "inherit"] });
    const line = await new Promise<string>((resolve) => child.stdout.on("data", (c: Buffer) => resolve(String(c))));
    const { launcher, sleeper } = JSON.parse(line) as { launcher: number; sleeper: number };
    expect(alive(launcher) && alive(sleeper)).toBe(true);
    killChild(child, "SIGKILL");
    expect(await until(() => !alive(launcher) && !alive(sleeper), 10_000)).toBe(true);
  });
});

describe("a launch whose spawn fails, killed before the failure is reported", () => {
  // What SIGKILLed CI's whole test run: Node gives a failed spawn's handle pid 0 until the next tick, so a kill in
  // that window is kill(0) — the control plane's own process group. The scenario runs in a control plane started in
  // a session of its own, so a regression kills only that process, which the test then reports.
  it.each([
    ["through the launcher process (spawn and kill in one IPC read)", "process"],
    ["spawned directly by the control plane", "direct"],
  ])("reports the failed start %s and signals no process group", async (_name, mode) => {
    const root = tempRoot("launcher-failed-spawn");
    onTestFinished(() => root.remove());
    const client = new URL("../../dist/sandbox/launcher/client.js", import.meta.url).pathname;
    const controlPlane = join(root.path, "control-plane.mjs");
    writeFileSync(controlPlane, `
import { Launcher, launcherScript } from ${JSON.stringify(client)};
const launcher = new Launcher(process.argv[2] === "direct" ? null : launcherScript());
// The first launch forks the launcher: the spawn and its kill queue on the new channel and arrive in one read.
const gone = launcher.launch({ file: "/bin/sh", args: ["-c", "exit 0"], cwd: ${JSON.stringify(join(root.path, "removed-sandbox-dir"))}, env: {} });
gone.kill();
const exit = await gone.exited;
await new Promise((r) => setTimeout(r, 300)); // a stray group kill would land by now
console.log(JSON.stringify({ external: launcher.external, exit }));
launcher.close();
`);
    const child = spawn(process.execPath, [controlPlane, mode], { stdio: ["ignore", "pipe", "inherit"], detached: true });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("close", (c, s) => resolve([c, s])));
    expect({ code, signal }, "the control plane was signalled: a kill reached its process group").toEqual({ code: 0, signal: null });
    const report = JSON.parse(out) as { external: boolean; exit: LaunchExit };
    expect(report.external).toBe(mode === "process");
    expect(report.exit.code).toBeNull();
    expect(report.exit.diagnostics).toMatch(/ENOENT|cannot start/);
  });
});
