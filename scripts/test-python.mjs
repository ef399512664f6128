#!/usr/bin/env node
// Runs the Python worker's unit tests with Debian's interpreter (the only one that sees python3-torch), echoing
// unittest's output and keeping its counts in .cache/test-results/python.json for the closing summary.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const python = process.env.HARNESSRL_PYTHON ?? "/usr/bin/python3";
const tests = join(root, "worker", "tests");
const resultsDir = join(root, ".cache", "test-results");
if (!existsSync(tests)) {
  console.log("no Python tests yet");
  process.exit(0);
}
const env = { ...process.env, OPENBLAS_NUM_THREADS: "1", OMP_NUM_THREADS: "1", PYTHONDONTWRITEBYTECODE: "1" };
const child = spawn(python, ["-m", "unittest", "discover", "-s", tests, "-t", join(root, "worker"), "-v"], {
  cwd: join(root, "worker"),
  stdio: ["ignore", "inherit", "pipe"],
  env,
});
// unittest reports on stderr; keep only the tail, where its totals are.
let tail = "";
child.stderr.on("data", (chunk) => {
  process.stderr.write(chunk);
  tail = (tail + chunk.toString("utf8")).slice(-4096);
});
child.on("close", (code, signal) => {
  const ran = Number(/^Ran (\d+) tests? in /m.exec(tail)?.[1] ?? "0");
  const count = (name) => Number(new RegExp(`\\b${name}=(\\d+)`).exec(tail.slice(tail.lastIndexOf("\nRan ")))?.[1] ?? "0");
  const failed = count("failures") + count("errors") + count("unexpected successes");
  const skipped = count("skipped") + count("expected failures");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(join(resultsDir, "python.json"), JSON.stringify({ passed: ran - failed - skipped, failed, skipped }) + "\n");
  process.exit(code ?? (signal ? 1 : 0));
});
