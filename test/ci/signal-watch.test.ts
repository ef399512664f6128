import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();
const WATCH = join(import.meta.dirname, "..", "..", "scripts", "signal-watch.mjs");
// What the watcher needs to trace: root and a tracefs with instances (as in CI; as root it mounts tracefs itself, and
// this file runs under the watcher there); elsewhere it only passes statuses on.
const canTrace = process.getuid?.() === 0 && ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"].some((d) => existsSync(join(d, "instances")));

const watch = (script: string): { status: number | null; stderr: string } => {
  const r = spawnSync(process.execPath, [WATCH, "bash", "-c", script], { cwd: tempDir("hrl-signal-watch-"), encoding: "utf8", timeout: 60_000 });
  return { status: r.status, stderr: r.stderr };
};

describe("scripts/signal-watch.mjs (what .ci/run runs the test command under)", () => {
  it("passes the command's exit status on and reports nothing when it exits normally", () => {
    expect(watch("exit 3")).toEqual({ status: 3, stderr: "" });
  });

  it("survives a command that SIGKILLs its own process group, exits 137, and names the sender and its ancestry", () => {
    const r = watch('sleep 0.2; sh -c "kill -9 0"');
    expect(r.status).toBe(137);
    if (!canTrace) {
      // Silence would read as "nobody sent a kill": the report says tracing was missing.
      expect(r.stderr).toMatch(/ended with SIGKILL; no kernel tracing \((not root|no tracefs)\), so the sender is unknown/);
      return;
    }
    expect(r.stderr).toMatch(/ended with SIGKILL/);
    expect(r.stderr).toMatch(/SIGKILL to it at [\d.]+ from sh \d+ \(\/(usr\/)?bin\/sh\)/);
    expect(r.stderr).toMatch(/kill\(0, SIGKILL\) at [\d.]+ by sh \d+ \(\/(usr\/)?bin\/sh\) <- \d+/);
  });
});
