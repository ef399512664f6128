import { rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { diskUsage } from "../../src/sandbox/disk-usage.js";
import { LIMITS, useColdBwrapBackend } from "./helpers.js";

const MiB = 1024 * 1024;

describe("bwrap sandbox: disk budget and host details", () => {
  const bwrap = useColdBwrapBackend("hardening");

  it("a command writing many files past the disk budget is killed and flagged; the host directory stops near the budget", async () => {
    const s = await bwrap.backend.create({ limits: { ...LIMITS, diskBytes: 32 * MiB } });
    try {
      const r = await s.exec(["sh", "-c", "i=0; while [ $i -lt 400 ]; do head -c 1048576 /dev/zero > f$i; i=$((i+1)); done; echo wrote-all; sleep 30"], { timeoutMs: 60_000 });
      expect(r.diskLimitHit).toBe(true);
      expect(r.signal).toBe("SIGKILL");
      expect(r.timedOut).toBe(false);
      expect(r.stdout).not.toContain("wrote-all");
      expect(r.stderr).toMatch(/over its disk budget of 33554432 bytes/);
      expect(await diskUsage([s.workspaceDir])).toBeLessThan(400 * MiB);
      // While it stays over budget, further execs are refused the same way (nothing starts).
      const again = await s.exec(["sh", "-c", "echo again"]);
      expect(again).toMatchObject({ diskLimitHit: true, signal: "SIGKILL", stdout: "" });
      // Within its budget again (files removed by the host), a sandbox runs commands as before.
      for (const f of await s.listFiles()) await rm(join(s.workspaceDir, f));
      const after = await s.exec(["sh", "-c", "echo fine"]);
      expect(after).toMatchObject({ exitCode: 0, stdout: "fine\n" });
      expect(after.diskLimitHit).toBeUndefined();
    } finally {
      await s.destroy();
    }
  });

  it("one file can never grow past the budget, sparse or preallocated (RLIMIT_FSIZE)", async () => {
    const s = await bwrap.backend.create({ limits: { ...LIMITS, diskBytes: 8 * MiB } });
    try {
      const script = [
        "head -c 20000000 /dev/zero > big 2>/dev/null; echo big=$(stat -c %s big)",
        "truncate -s 100G sparse 2>/dev/null && echo SPARSE-OK || echo sparse-refused",
        "fallocate -l 50G alloc 2>/dev/null && echo ALLOC-OK || echo alloc-refused",
      ].join("\n");
      const r = await s.exec(["sh", "-c", script]);
      const size = Number(/big=(\d+)/.exec(r.stdout)?.[1]);
      expect(size).toBeLessThanOrEqual(8 * MiB);
      expect(r.stdout).toContain("sparse-refused");
      expect(r.stdout).toContain("alloc-refused");
    } finally {
      await s.destroy();
    }
  });

  it("sees neither the host's cgroups nor its network interfaces under /sys", async () => {
    const s = await bwrap.backend.create({ limits: LIMITS });
    try {
      const script = [
        'echo "cgroupfs=$(ls -A /sys/fs/cgroup | wc -l)"',
        'echo "classnet=$(ls -A /sys/class/net | wc -l)"',
        'echo "devnet=$(find /sys/devices -maxdepth 8 -path "*/net/*" 2>/dev/null | wc -l)"',
        'echo "procnet=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\\n" ,)"',
        "echo x > /sys/fs/cgroup/x 2>/dev/null && echo WROTE || echo ro",
        'grep -c harnessrl /proc/self/cgroup || true',
        "hostname",
      ].join("\n");
      const r = await s.exec(["sh", "-c", script]);
      expect(r.stdout).toContain("cgroupfs=0\n");
      expect(r.stdout).toContain("classnet=0\n");
      expect(r.stdout).toContain("devnet=0\n");
      expect(r.stdout).toContain("procnet=lo,\n");
      expect(r.stdout).toContain("ro\n");
      // The cgroup namespace: its own cgroup is its root, no host cgroup path.
      expect(r.stdout).toMatch(/\n0\nsandbox\n$/);
    } finally {
      await s.destroy();
    }
  });

  it("a command cannot ptrace or read the memory of another process of its sandbox, the exec agent included (seccomp: EPERM); normal commands still run", async () => {
    // ctypes on the system python: attach to a sleeping child and to the agent, seize, process_vm_readv, and (x86_64)
    // an x32-ABI syscall, which a filter matching only plain numbers would let through (without the filter: ENOSYS).
    const probe = [
      "import ctypes, os, time",
      "libc = ctypes.CDLL(None, use_errno=True)",
      "libc.ptrace.restype = libc.syscall.restype = libc.process_vm_readv.restype = ctypes.c_long",
      "def res(r): return 'ok' if r >= 0 else 'errno%d' % ctypes.get_errno()",
      "pid = os.fork()",
      "if pid == 0:",
      "    time.sleep(60); os._exit(0)",
      "agent = [int(p) for p in os.listdir('/proc') if p.isdigit() and b'agent/main.cjs' in open('/proc/%s/cmdline' % p, 'rb').read()][0]",
      "class iovec(ctypes.Structure): _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]",
      "buf = ctypes.create_string_buffer(8)",
      "iov = iovec(ctypes.cast(buf, ctypes.c_void_p), 8)",
      "out = ['attach-child=' + res(libc.ptrace(16, pid, None, None))]",
      "out.append('seize-child=' + res(libc.ptrace(0x4206, pid, None, None)))",
      "out.append('vm-read=' + res(libc.process_vm_readv(pid, ctypes.byref(iov), 1, ctypes.byref(iov), 1, 0)))",
      "out.append('attach-agent=' + res(libc.ptrace(16, agent, None, None)))",
      "out.append('x32=' + (res(libc.syscall(0x40000000 | 39)) if os.uname().machine == 'x86_64' else 'errno1'))",
      "os.kill(pid, 9); os.waitpid(pid, 0)",
      "print(' '.join(out))",
    ].join("\n");
    const s = await bwrap.backend.create({ limits: LIMITS, workspaceFiles: { "probe.py": probe } });
    try {
      const r = await s.exec(["/usr/bin/python3", "probe.py"]);
      expect(r.stderr).toBe("");
      expect(r.stdout).toBe("attach-child=errno1 seize-child=errno1 vm-read=errno1 attach-agent=errno1 x32=errno1\n");
      const after = await s.exec(["sh", "-c", "echo fine; /usr/bin/python3 -c 'import subprocess; print(subprocess.run([\"ls\", \"/workspace\"], capture_output=True, text=True).stdout.strip())'"]);
      expect(after).toMatchObject({ exitCode: 0, stdout: "fine\nprobe.py\n" });
    } finally {
      await s.destroy();
    }
  });
});
