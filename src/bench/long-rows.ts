/**
 * `npm run bench:long-rows`: the trainer worker's `forward_backward` on single packed rows of 2k–64k tokens and on a
 * GRPO group (one 30k-token prompt shared by 4 completions of 512 tokens), tokens/s and peak RSS, for the worker's
 * long-row path (`chunked`: attention recomputed in backward, logits only at trainable tokens, the last layer only
 * where those logits read) beside the same without last-layer pruning (`unpruned`) and the previous path (`current`:
 * stored attention probabilities, logits at every token) where that fits. The model has Qwen3's vocabulary (151,936,
 * tied) and a tiny body (`--layers`, default 1). Each case runs in its own Python process under a memory and time
 * watchdog (worker/bench/long_rows.py). Writes docs/bench/long-rows.json.
 *
 * Options: --out FILE, --limit-mb M (kill a case past M MiB resident, default 8192), --timeout S (per case, default
 * 600), --threads N (default 2), --layers N (default 1), --cases kind:tokens:path,... (default: the table in
 * docs/worker.md).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { pythonExecutable, workerPackageDir } from "../trainer/paths.js";

interface CaseResult {
  kind: string;
  tokens: number;
  path: string;
  status: string;
  trainable?: number;
  seconds?: number;
  tokens_per_second?: number;
  tokens_per_cpu_second?: number;
  peak_rss_mb?: number;
  limit_mb?: number;
}

interface Report {
  total_seconds: number;
  machine: { loadavg_at_end: number[] };
  results: CaseResult[];
}

function cell(r: CaseResult | undefined): string {
  if (!r) return "not run";
  if (r.status === "ok") return `${r.tokens_per_second} tok/s (${r.tokens_per_cpu_second} per CPU-s), ${r.peak_rss_mb} MiB`;
  if (r.status === "exceeded_memory_limit") return `does not fit: > ${r.limit_mb} MiB after ${r.seconds} s`;
  return r.status;
}

function main(): void {
  const { values } = parseArgs({
    options: { out: { type: "string" }, "limit-mb": { type: "string" }, timeout: { type: "string" }, threads: { type: "string" }, layers: { type: "string" }, cases: { type: "string" } },
  });
  const out = resolve(values.out ?? "docs/bench/long-rows.json");
  mkdirSync(dirname(out), { recursive: true });
  const args = [join(workerPackageDir(), "bench", "long_rows.py"), "run", "--out", out];
  for (const key of ["limit-mb", "timeout", "threads", "layers", "cases"] as const) {
    const v = values[key];
    if (v !== undefined) args.push(`--${key}`, v);
  }
  const env = { ...process.env, OPENBLAS_NUM_THREADS: "1", PYTHONDONTWRITEBYTECODE: "1" };
  const r = spawnSync(pythonExecutable(), args, { stdio: ["ignore", "inherit", "inherit"], env });
  if (r.status !== 0) {
    console.error(`long_rows.py exited with ${r.status ?? r.signal}`);
    process.exit(1);
  }
  const report = JSON.parse(readFileSync(out, "utf8")) as Report;
  const keys = [...new Set(report.results.map((c) => `${c.kind}:${c.tokens}`))];
  const lines = ["| row | trainable | chunked (default) | unpruned | current |", "|---|---:|---|---|---|"];
  for (const key of keys) {
    const of = (path: string): CaseResult | undefined => report.results.find((c) => `${c.kind}:${c.tokens}` === key && c.path === path);
    const trainable = of("chunked")?.trainable ?? of("current")?.trainable ?? "";
    lines.push(`| ${key} | ${trainable} | ${cell(of("chunked"))} | ${cell(of("unpruned"))} | ${cell(of("current"))} |`);
  }
  console.log(lines.join("\n"));
  console.log(`total ${report.total_seconds} s, load average at the end ${report.machine.loadavg_at_end.join(" ")}; written to ${out}`);
}

main();
