import { describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SandboxCgroup, pickHierarchies } from "../../src/sandbox/cgroups.js";

// Real mountinfo lines (trimmed) from a cgroup-v1 machine like ours, a pure-v2 host, and a hybrid one.
const V1 = [
  "30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
  "33 30 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
  "36 30 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
  "40 30 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids",
  "42 30 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
].join("\n");
const V2 = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot";

describe("cgroup hierarchy detection", () => {
  it("uses v1 memory and pids when the unified hierarchy only offers hugetlb (these machines)", () => {
    const h = pickHierarchies(V1, () => "hugetlb\n");
    expect(h.memory).toEqual({ version: 1, mount: "/sys/fs/cgroup/memory" });
    expect(h.pids).toEqual({ version: 1, mount: "/sys/fs/cgroup/pids" });
    expect(h.cpu).toEqual({ version: 1, mount: "/sys/fs/cgroup/cpu" });
  });

  it("uses the unified hierarchy on a pure cgroup v2 host", () => {
    const h = pickHierarchies(V2, (mount) => (mount === "/sys/fs/cgroup" ? "cpuset cpu io memory hugetlb pids rdma misc\n" : undefined));
    expect(h).toEqual({
      memory: { version: 2, mount: "/sys/fs/cgroup" },
      pids: { version: 2, mount: "/sys/fs/cgroup" },
      cpu: { version: 2, mount: "/sys/fs/cgroup" },
    });
  });

  it("prefers v2 per controller on hybrid hosts and reports nothing when no controller exists", () => {
    const h = pickHierarchies(V1, () => "memory\n");
    expect(h.memory?.version).toBe(2);
    expect(h.pids?.version).toBe(1);
    expect(pickHierarchies("", () => undefined)).toEqual({});
  });
});

describe("a sandbox cgroup's process list", () => {
  it("never yields pid 0 (a task outside our pid namespace), our own pid or junk: kill() of those would hit our own group", () => {
    const dir = mkdtempSync(join(tmpdir(), "harnessrl-cgroup-"));
    try {
      writeFileSync(join(dir, "cgroup.procs"), `0\n4242\n${process.pid}\n-1\n12abc\n\n4243\n`);
      const cgroup = new SandboxCgroup({ pids: dir });
      expect(cgroup.pids().filter((p) => p !== process.pid)).toEqual([4242, 4243]);
      expect(cgroup.pids()).not.toContain(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
