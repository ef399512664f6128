import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { procStatFields } from "../../src/core/proc-stat.js";
import { killReapedGroup } from "../../src/core/process-group.js";
import { killChild } from "../../src/core/kill-child.js";

const gone = (pid: number): boolean => {
  const state = procStatFields(pid)?.[0];
  return state === undefined || state === "Z";
};

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

describe("killReapedGroup (the group of a leader that has exited)", () => {
  it("kills the background straggler a finished command left in its group", async () => {
    const child = spawn("sh", ["-c", "sleep 30 >/dev/null 2>&1 & echo $!"], { detached: true, stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    await new Promise((resolve) => child.once("exit", resolve));
    const straggler = Number(out.trim());
    expect(straggler).toBeGreaterThan(1);
    try {
      expect(gone(straggler)).toBe(false);
      killReapedGroup(child.pid!);
      expect(await until(() => gone(straggler), 5000)).toBe(true);
    } finally {
      if (!gone(straggler)) process.kill(straggler, "SIGKILL");
    }
  });

  it("leaves alone a live process holding the number, as after the pid was recycled", async () => {
    // A live leader of its own group stands in for a stranger that got the reaped leader's pid.
    const stranger = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
    await new Promise((resolve) => stranger.once("spawn", resolve));
    try {
      killReapedGroup(stranger.pid!);
      await new Promise((r) => setTimeout(r, 200));
      expect(gone(stranger.pid!)).toBe(false);
      expect(stranger.exitCode).toBeNull();
    } finally {
      killChild(stranger, "SIGKILL");
    }
  });
});
