import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { Launcher, launcherScript } from "../../src/sandbox/launcher/client.js";
import type { LaunchExit, Launched } from "../../src/sandbox/launcher/types.js";
import { tempRoot } from "./helpers.js";

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
    child.kill("SIGKILL");
    expect(await until(() => !alive(launcher) && !alive(sleeper), 10_000)).toBe(true);
  });
});
