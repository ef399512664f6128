#!/usr/bin/env node
// Runs the Python worker's unit tests with Debian's interpreter (the only one that sees python3-torch).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const python = process.env.HARNESSRL_PYTHON ?? "/usr/bin/python3";
const tests = join(root, "worker", "tests");
if (!existsSync(tests)) {
  console.log("no Python tests yet");
  process.exit(0);
}
const env = { ...process.env, OPENBLAS_NUM_THREADS: "1", OMP_NUM_THREADS: "1", PYTHONDONTWRITEBYTECODE: "1" };
const r = spawnSync(python, ["-m", "unittest", "discover", "-s", tests, "-t", join(root, "worker"), "-v"], { cwd: join(root, "worker"), stdio: "inherit", env });
process.exit(r.status ?? 1);
