/**
 * `npm run bench:disk-meter`: what the sandboxes' disk-budget polls cost the control plane, measured the old way (GNU
 * du spawned by the control plane itself) and through the disk meter (du spawned by a small child process), side by
 * side in one run. The control plane holds `--hold-mb` of memory, as it does with the llama.cpp engine loaded:
 * forking costs in proportion to the parent's mapped memory. Each round asks for 16 sandboxes' usage at once (16
 * rollouts polling), alternating the two ways round by round so the machine's load hits both alike. Reports the wall
 * time per round, the control plane's own CPU (user, system) per measurement, and that of the processes measuring
 * (du children; the meter and its du children). Writes docs/bench/disk-meter.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";
import { CLOCK_TICKS_PER_SECOND, procStatFields } from "../core/proc-stat.js";
import { DiskMeter } from "../sandbox/disk-meter/client.js";
import { diskUsage } from "../sandbox/disk-usage.js";
import { writeBenchResult } from "./output.js";
import { latencySummary } from "./stats.js";

const SANDBOXES = 16;
const round = (x: number, digits = 2): number => Number(x.toFixed(digits));
const totalCpu = (v: { controlPlaneUserMsPerMeasurement: number; controlPlaneSysMsPerMeasurement: number; helperCpuMsPerMeasurement: number }): number =>
  v.controlPlaneUserMsPerMeasurement + v.controlPlaneSysMsPerMeasurement + v.helperCpuMsPerMeasurement;

interface Way {
  wallMs: number[];
  userMs: number;
  sysMs: number;
  /** CPU of the processes doing the measuring: the du children, and for the meter the meter process itself. */
  helperMs: number;
  measurements: number;
}

/** Sum (ms) of the given CPU-time fields of /proc/<pid>/stat (procStatFields' indices: utime 11, stime 12, cutime 13, cstime 14). */
function statCpuMs(pid: number | "self", fields: readonly number[]): number {
  const f = procStatFields(pid) ?? [];
  return (fields.reduce((sum, i) => sum + Number(f[i] ?? 0), 0) * 1000) / CLOCK_TICKS_PER_SECOND;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { rounds: { type: "string", default: "40" }, "hold-mb": { type: "string", default: "800" }, out: { type: "string", default: "docs/bench/disk-meter.json" } },
  });
  const rounds = Math.max(1, Number(values.rounds));
  const holdMb = Math.max(0, Number(values["hold-mb"]));
  // Touched pages, as an engine's weights and KV cache are.
  const held = Array.from({ length: holdMb }, () => Buffer.alloc(1 << 20, 1));
  const root = mkdtempSync(join(tmpdir(), "hrl-bench-disk-"));
  try {
    // A harness sandbox's workspace and HOME: a few dozen small files.
    const sandboxes = Array.from({ length: SANDBOXES }, (_, i) => {
      const dirs = [join(root, `ws-${i}`), join(root, `home-${i}`)];
      for (const d of dirs) {
        mkdirSync(join(d, ".cache"), { recursive: true });
        for (let f = 0; f < 20; f++) writeFileSync(join(d, f % 2 ? ".cache" : "", `f${f}`), Buffer.alloc(2000 + f * 100, f));
      }
      return dirs;
    });
    const meter = new DiskMeter();
    const ways: [string, (roots: string[]) => Promise<number>][] = [
      ["du spawned by the control plane (before)", diskUsage],
      ["disk meter child process (now)", (roots) => meter.measure(roots)],
    ];
    const results = ways.map((): Way => ({ wallMs: [], userMs: 0, sysMs: 0, helperMs: 0, measurements: 0 }));
    const helperCpu = (k: number): number => (k === 0 ? statCpuMs("self", [13, 14]) : meter.pid === undefined ? 0 : statCpuMs(meter.pid, [11, 12, 13, 14]));
    // Warm-up: starts the meter, fills caches.
    for (const [, measure] of ways) await Promise.all(sandboxes.map((s) => measure(s)));
    for (let r = 0; r < rounds; r++) {
      for (const [k, [, measure]] of ways.entries()) {
        const w = results[k]!;
        const c0 = process.cpuUsage();
        const h0 = helperCpu(k);
        const t0 = performance.now();
        await Promise.all(sandboxes.map((s) => measure(s)));
        w.wallMs.push(performance.now() - t0);
        const c = process.cpuUsage(c0);
        w.helperMs += helperCpu(k) - h0;
        w.userMs += c.user / 1000;
        w.sysMs += c.system / 1000;
        w.measurements += sandboxes.length;
      }
      if ((r + 1) % 10 === 0) console.error(`bench:disk-meter: ${r + 1}/${rounds} rounds`);
    }
    meter.close();
    const variants = ways.map(([name], k) => {
      const w = results[k]!;
      const wall = latencySummary(w.wallMs);
      return { variant: name, roundP50Ms: round(wall.p50, 1), roundP99Ms: round(wall.p99, 1), controlPlaneUserMsPerMeasurement: round(w.userMs / w.measurements), controlPlaneSysMsPerMeasurement: round(w.sysMs / w.measurements), helperCpuMsPerMeasurement: round(w.helperMs / w.measurements) };
    });
    const [before, now] = variants;
    const result = {
      bench: "disk-meter",
      date: new Date().toISOString(),
      loadavg: loadavg().map((x) => round(x)),
      heldMb: held.length,
      sandboxesPerRound: SANDBOXES,
      rounds,
      variants,
      ratios: before && now ? { roundWall: round(before.roundP50Ms / now.roundP50Ms), controlPlaneCpu: round((before.controlPlaneUserMsPerMeasurement + before.controlPlaneSysMsPerMeasurement) / Math.max(1e-3, now.controlPlaneUserMsPerMeasurement + now.controlPlaneSysMsPerMeasurement)), totalCpu: round(totalCpu(before) / Math.max(1e-3, totalCpu(now))) } : null,
    };
    writeBenchResult(values.out, result);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
