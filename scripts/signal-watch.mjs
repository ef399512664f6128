#!/usr/bin/env node
// Runs a command in a session of its own and, where the kernel's tracefs is writable (root on Linux), records who sends
// SIGKILL to whom while it runs. If the command dies by a signal, it prints the senders of group and broadcast kills
// (kill(0), kill(-pgid), kill(-1)) and of the signal that ended the command, each with its ancestry from the traced
// fork/exec events. Why: CI runs have died with the whole process group SIGKILLed (exit 137) at a point no local run
// reproduces reliably; the command's own output cannot say who did it, and this can.
//
// Usage: node scripts/signal-watch.mjs <command> [args...]   (exit status: the command's, 128 + n for signal n)
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { constants } from "node:os";
import { join } from "node:path";

const [file, ...args] = process.argv.slice(2);
if (!file) {
  console.error("usage: signal-watch.mjs <command> [args...]");
  process.exit(2);
}

const ROOT = process.getuid?.() === 0;
const TRACEFS = findTracefs();
const EVENTS = ["syscalls/sys_enter_kill", "signal/signal_generate", "sched/sched_process_fork", "sched/sched_process_exec"];
const FILTERS = {
  // kill(2)'s pid argument as the tracepoint sees it (unsigned): 0 = own group, > 2^31 = negative (a group, or -1).
  "syscalls/sys_enter_kill": "sig == 9 && (pid == 0 || pid > 2147483647)",
  "signal/signal_generate": "sig == 9",
};

/** Where tracefs is mounted; as root, mounts it first where it is not (CI machines boot without it, and a silent
 * watcher told us nothing about two SIGKILLed runs). */
function findTracefs() {
  const found = () => ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"].find((d) => existsSync(join(d, "instances")));
  if (found() || !ROOT || !existsSync("/sys/kernel/tracing")) return found();
  const r = spawnSync("mount", ["-t", "tracefs", "nodev", "/sys/kernel/tracing"], { encoding: "utf8" });
  if (r.status !== 0) console.error(`signal-watch: could not mount tracefs (${(r.stderr || r.error?.message || "").trim()})`);
  return found();
}

/** Why there is no trace, for the report of a killed command (silence would read as "nobody sent a kill"). */
let noTrace = "";

/** A private trace instance (the global buffer stays as it was), or undefined where tracing is unavailable. */
function startTrace(out) {
  if (!TRACEFS || !ROOT) {
    noTrace = ROOT ? "no tracefs" : "not root";
    return undefined;
  }
  const dir = join(TRACEFS, "instances", `harnessrl-signal-watch-${process.pid}`);
  try {
    mkdirSync(dir);
    writeFileSync(join(dir, "buffer_size_kb"), "16384");
    for (const e of EVENTS) {
      const f = FILTERS[e];
      if (f) writeFileSync(join(dir, "events", e, "filter"), f);
      writeFileSync(join(dir, "events", e, "enable"), "1");
    }
  } catch (e) {
    noTrace = e instanceof Error ? e.message : String(e);
    console.error(`signal-watch: no kernel tracing (${noTrace}); running without it`);
    stopTrace(dir);
    return undefined;
  }
  const sink = createWriteStream(out);
  // A reader of trace_pipe of our own (cat): reading it from this process's event loop would block a libuv thread.
  const reader = spawn("cat", [join(dir, "trace_pipe")], { stdio: ["ignore", "pipe", "ignore"] });
  reader.stdout.pipe(sink);
  return { dir, reader, sink };
}

function stopTrace(dir) {
  if (!dir || !existsSync(dir)) return;
  for (const e of EVENTS) {
    try {
      writeFileSync(join(dir, "events", e, "enable"), "0");
    } catch {
      // not enabled
    }
  }
  try {
    writeFileSync(join(dir, "tracing_on"), "0");
    rmdirSync(dir);
  } catch {
    // busy: the instance stays; harmless
  }
}

/** Parses trace lines into the kills, the signals and each pid's parent and program. */
function analyse(text, victim) {
  const parent = new Map();
  const program = new Map();
  const kills = [];
  const victimSenders = [];
  for (const line of text.split("\n")) {
    const head = line.match(/^\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+):\s+(\w+)[:(]\s*(.*)$/);
    if (!head) continue;
    const [, comm, pidText, time, event, rest] = head;
    const pid = Number(pidText);
    if (event === "sched_process_fork") {
      const m = rest.match(/child_comm=(.*) child_pid=(\d+)/);
      if (m) parent.set(Number(m[2]), pid);
    } else if (event === "sched_process_exec") {
      const m = rest.match(/filename=(\S+)/);
      if (m) program.set(pid, m[1]);
    } else if (event === "sys_kill") {
      // The register as printed (hex or decimal, by kernel): a negative pid shows as its 32- or 64-bit complement.
      const m = rest.match(/pid: (0x[0-9a-f]+|\d+)/);
      if (m) {
        const raw = BigInt(m[1]);
        const target = raw >= 2n ** 63n ? raw - 2n ** 64n : raw >= 2n ** 31n ? raw - 2n ** 32n : raw;
        kills.push({ time, comm, pid, target: Number(target) });
      }
    } else if (event === "signal_generate") {
      const m = rest.match(/comm=(.*) pid=(\d+) grp=/);
      if (m && Number(m[2]) === victim) victimSenders.push({ time, comm, pid });
    }
  }
  const chainOf = (pid) => {
    const chain = [];
    for (let p = pid, n = 0; p !== undefined && n < 30; p = parent.get(p), n++) chain.push(p);
    return chain;
  };
  const ancestry = (pid) => chainOf(pid).map((p) => `${p}${program.has(p) ? ` (${program.get(p)})` : ""}`).join(" <- ");
  // kill(-1) inside a sandbox's PID namespace (its exec agent's sweep) reaches only that sandbox: not a suspect.
  const sandboxed = (pid) => chainOf(pid).some((p) => program.get(p)?.endsWith("/bwrap"));
  return { kills: kills.filter((k) => k.target !== -1 || !sandboxed(k.pid)), victimSenders, ancestry };
}

const traceFile = join(process.cwd(), ".cache", "signal-watch.trace");
mkdirSync(join(process.cwd(), ".cache"), { recursive: true });
const trace = startTrace(traceFile);
// A session of its own: a kill(0) from inside the command's tree cannot reach this watcher, which then reports it.
const child = spawn(file, args, { stdio: "inherit", detached: true });
// Passed on to the command's whole group (its own session now, so a terminal's ^C or a runner's SIGTERM to ours would
// not reach it otherwise).
for (const s of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(s, () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, s);
    } catch {
      // already gone
    }
  });
}
child.on("exit", (code, signal) => {
  const status = signal ? 128 + (constants.signals[signal] ?? 0) : (code ?? 1);
  const report = () => {
    const { kills, victimSenders, ancestry } = analyse(readFileSync(traceFile, "utf8"), child.pid);
    console.error(`\nsignal-watch: \`${[file, ...args].join(" ")}\` (pid ${child.pid}) ended with ${signal ?? `exit code ${code}`}.`);
    for (const s of victimSenders) console.error(`  SIGKILL to it at ${s.time} from ${s.comm} ${ancestry(s.pid)}`);
    for (const k of kills.slice(-20)) console.error(`  kill(${k.target}, SIGKILL) at ${k.time} by ${k.comm} ${ancestry(k.pid)}`);
    console.error(`  ${kills.length} group or broadcast SIGKILL(s) outside sandboxes traced; the whole trace: ${traceFile}`);
  };
  const finish = () => {
    stopTrace(trace?.dir);
    if (trace && status >= 128) report();
    else if (status >= 128) console.error(`\nsignal-watch: the command ended with ${signal ?? `exit code ${code}`}; no kernel tracing (${noTrace}), so the sender is unknown.`);
    process.exit(status);
  };
  if (!trace) return finish();
  // Let the reader drain what the kernel still holds, then stop it.
  setTimeout(() => {
    // The instance can only be removed once nothing holds its trace_pipe open.
    // A reader whose spawn failed has closed already, and its kill() would be kill(0): our own group.
    if (trace.reader.pid === undefined) return trace.sink.end(finish);
    trace.reader.once("close", () => trace.sink.end(finish));
    trace.reader.kill();
  }, 1000);
});
