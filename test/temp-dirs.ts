import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

/**
 * Temporary folders for one test file, removed after its last test (run directories with checkpoints and engines'
 * models are tens of MB each: left behind, every suite run added ~95 MB to /tmp). `HARNESSRL_KEEP_TMP=1` keeps
 * them for a look after a failure. Call once at the top level of the test file.
 */
export function tempDirs(): (prefix: string) => string {
  const made: string[] = [];
  afterAll(() => {
    if (process.env.HARNESSRL_KEEP_TMP === "1") return;
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return (prefix) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    made.push(dir);
    return dir;
  };
}
