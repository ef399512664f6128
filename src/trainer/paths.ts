import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { InfraError } from "../core/errors.js";

/** Debian's interpreter is the one that sees python3-torch; HARNESSRL_PYTHON overrides it (e.g. a CUDA venv). */
export function pythonExecutable(env: NodeJS.ProcessEnv = process.env): string {
  return env.HARNESSRL_PYTHON ?? "/usr/bin/python3";
}

/**
 * The `worker/` folder holding the harnessrl_worker package. This file lives two levels below the package root both
 * as source (src/trainer) and compiled (dist/trainer), so the same relative path works for tests and users.
 */
export function workerPackageDir(): string {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
  const dir = join(root, "worker");
  if (!existsSync(join(dir, "harnessrl_worker", "__main__.py"))) {
    throw new InfraError("worker_not_found", `the trainer worker package is missing: expected ${dir}/harnessrl_worker`);
  }
  return dir;
}
