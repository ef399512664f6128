import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The package root (this module lives in src/harness/install or dist/harness/install). */
const packageRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/**
 * Where real harness CLIs are installed: `$HARNESSRL_HARNESS_CACHE`, else `<package root>/.cache/harnesses`
 * (gitignored). Each pinned package gets its own npm prefix `<cache>/<key>@<version>/`.
 */
export function harnessCacheDir(): string {
  const fromEnv = process.env.HARNESSRL_HARNESS_CACHE;
  return fromEnv ? resolve(fromEnv) : join(packageRoot, ".cache", "harnesses");
}
