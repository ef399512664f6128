import { spawn } from "node:child_process";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { procStatFields } from "../../src/core/proc-stat.js";
import { tempDirs } from "../temp-dirs.js";
import { killChild } from "../../src/core/kill-child.js";

const tempDir = tempDirs();

describe("procStatFields (/proc/<pid>/stat after the command name)", () => {
  it("reads this process: state, then the parent's pid", () => {
    const f = procStatFields("self");
    expect(f?.[0]).toMatch(/^[RSD]$/);
    expect(f?.[1]).toBe(String(process.ppid));
  });

  it("is not misled by a command name holding spaces and parentheses", async () => {
    const exe = join(tempDir("hrl-proc-stat-"), "x) 1 2 (y");
    copyFileSync("/bin/sleep", exe);
    const child = spawn(exe, ["5"], { stdio: "ignore" });
    await new Promise((resolve) => child.once("spawn", resolve));
    try {
      const f = procStatFields(child.pid!);
      expect(f?.[1]).toBe(String(process.pid));
      expect(Number(f?.[19])).toBeGreaterThan(0);
    } finally {
      killChild(child, "SIGKILL");
    }
  });

  it("answers undefined for a process that does not exist", () => {
    expect(procStatFields(2 ** 22 + 7)).toBeUndefined();
  });
});
