// The "developer's machine" load beside a measured run, and the machine's busy share while it ran.
//
// Issue 20's time bar is for a machine "as loaded as a developer's machine usually is". Sessions 35–43 measured that
// by hand with a node loop busy 10 ms and idle 10 ms beside each quickstart (half a core: a quarter of a 2-core
// machine), and read /proc/stat to say how busy the machine was. This file makes that one option of the sweep
// (`run.mjs --load 0.5`), so a loaded series can be repeated as it was measured.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { cpus } from "node:os";

// The child: busy `duty` of every 20 ms period on one core until its stdin closes (the sweep ended or died) or
// `maxSeconds` pass, so a load can never outlive the measurement by more than that bound.
const CHILD = `
const [duty, maxSeconds] = process.argv.slice(1).map(Number);
const end = Date.now() + maxSeconds * 1000;
const period = 20;
function tick() {
  if (Date.now() > end) process.exit(0);
  const busyUntil = Date.now() + duty * period;
  while (Date.now() < busyUntil) {}
  setTimeout(tick, (1 - duty) * period);
}
process.stdin.on("end", () => process.exit(0));
process.stdin.on("close", () => process.exit(0));
process.stdin.resume();
tick();
`;

/**
 * Starts `cores` worth of busy load (e.g. 0.5: one process busy half of every 20 ms; 1.5: two processes at 75 %).
 * Returns a handle whose stop() ends every process and resolves once they have exited.
 */
export function startLoad(cores, { maxSeconds = 3 * 3600 } = {}) {
  if (!(Number.isFinite(cores) && cores > 0 && cores <= 64)) throw new Error(`--load: ${cores} is not a number of cores in (0, 64]`);
  const n = Math.ceil(cores);
  const duty = cores / n;
  const children = Array.from({ length: n }, () => spawn(process.execPath, ["-e", CHILD, String(duty), String(maxSeconds)], { stdio: ["pipe", "ignore", "inherit"] }));
  // A child that could not start emits "error" and no "exit"; either settles it (and an unheard "error" would throw).
  const exited = children.map(
    (c) =>
      new Promise((resolve) => {
        if (c.exitCode !== null || c.signalCode !== null) return resolve();
        c.once("exit", () => resolve());
        c.once("error", () => resolve());
      }),
  );
  return {
    cores,
    pids: children.map((c) => c.pid),
    async stop() {
      for (const c of children) {
        c.stdin.end();
        // A child stuck in its busy stretch reads stdin's end only after it; SIGTERM ends it at once.
        c.kill("SIGTERM");
      }
      await Promise.all(exited);
    },
  };
}

/** The machine's cumulative CPU ticks from /proc/stat's first line (null where there is none: not Linux). */
export function cpuTicks(path = "/proc/stat") {
  if (!existsSync(path)) return null;
  const first = readFileSync(path, "utf8").split("\n", 1)[0] ?? "";
  const f = first.trim().split(/\s+/);
  if (f[0] !== "cpu") return null;
  // user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
  const v = f.slice(1, 9).map(Number);
  if (v.length < 5 || !v.every(Number.isFinite)) return null;
  const total = v.reduce((a, b) => a + b, 0);
  return { total, idle: (v[3] ?? 0) + (v[4] ?? 0) };
}

/** The share of all cores' time that was busy between two cpuTicks() readings (null without both or any time). */
export function busyShare(a, b) {
  if (!a || !b || b.total <= a.total) return null;
  return 1 - (b.idle - a.idle) / (b.total - a.total);
}

export const machineCores = () => cpus().length;
