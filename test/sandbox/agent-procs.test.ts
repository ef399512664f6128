import { describe, expect, it } from "vitest";
import { inPrivatePidNamespace } from "../../src/sandbox/agent/procs.js";

describe("the exec agent's check before it may kill(-1) (src/sandbox/agent/procs.ts)", () => {
  it("allows it only as bubblewrap init's first child, pid 2 of a private PID namespace", () => {
    expect(inPrivatePidNamespace(2, 1, () => "bwrap\n")).toBe(true);
  });

  it("refuses an orphan adopted by a host init that happens to be bwrap (a CI machine inside bubblewrap): not pid 2", () => {
    expect(inPrivatePidNamespace(5758, 1, () => "bwrap\n")).toBe(false);
  });

  it("refuses another init, another parent, an unreadable /proc/1/comm, and this (host) process", () => {
    expect(inPrivatePidNamespace(2, 1, () => "systemd\n")).toBe(false);
    expect(inPrivatePidNamespace(2, 7, () => "bwrap\n")).toBe(false);
    expect(
      inPrivatePidNamespace(2, 1, () => {
        throw new Error("ENOENT");
      }),
    ).toBe(false);
    expect(inPrivatePidNamespace()).toBe(false);
  });
});
