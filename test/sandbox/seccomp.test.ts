import { describe, expect, it } from "vitest";
import { DENIED_SYSCALLS, SECCOMP_ARCHES, encodeSeccomp, sandboxSeccomp, seccompProgram } from "../../src/sandbox/bwrap/seccomp.js";
import type { SockFilter } from "../../src/sandbox/bwrap/seccomp.js";

const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;

/** A classic-BPF interpreter for the few instructions the generator emits (ld abs word, jeq/jge k, ret k). */
function run(program: SockFilter[], data: { nr: number; arch: number }): number {
  let acc = 0;
  for (let pc = 0, steps = 0; pc < program.length && steps < 1000; pc++, steps++) {
    const ins = program[pc];
    if (!ins) break;
    if (ins.code === 0x20) acc = ins.k === 0 ? data.nr >>> 0 : ins.k === 4 ? data.arch : 0;
    else if (ins.code === 0x15) pc += acc === ins.k >>> 0 ? ins.jt : ins.jf;
    else if (ins.code === 0x35) pc += acc >= ins.k >>> 0 ? ins.jt : ins.jf;
    else if (ins.code === 0x06) return ins.k >>> 0;
    else throw new Error(`unexpected opcode ${ins.code}`);
  }
  throw new Error("fell off the program");
}

describe("sandbox seccomp filter", () => {
  for (const [name, a] of Object.entries(SECCOMP_ARCHES)) {
    it(`${name}: denies each listed syscall with EPERM, allows the rest, refuses foreign ABIs`, () => {
      const p = seccompProgram(a);
      for (const sc of DENIED_SYSCALLS) expect(run(p, { nr: a.numbers[sc], arch: a.auditArch }), sc).toBe(EPERM);
      const denied = new Set<number>(Object.values(a.numbers));
      for (let nr = 0; nr < 460; nr++) if (!denied.has(nr)) expect(run(p, { nr, arch: a.auditArch })).toBe(ALLOW);
      // i386 (int 0x80) on x86_64, arm32 on aarch64: different numbers, so nothing of it is allowed.
      expect(run(p, { nr: 26, arch: 0x40000003 })).toBe(EPERM);
      expect(run(p, { nr: 20, arch: 0x40000028 })).toBe(EPERM);
      // x32: ptrace is 0x40000000 + 521 there, under the same AUDIT_ARCH_X86_64.
      expect(run(p, { nr: 0x40000000 + 521, arch: a.auditArch })).toBe(a.x32 ? EPERM : ALLOW);
    });
  }

  it("encodes 8 bytes per instruction; an unknown architecture is refused", () => {
    const x64 = SECCOMP_ARCHES.x64;
    if (!x64) throw new Error("no x64");
    expect(encodeSeccomp(seccompProgram(x64)).length).toBe(seccompProgram(x64).length * 8);
    expect(sandboxSeccomp("x64").length % 8).toBe(0);
    expect(() => sandboxSeccomp("riscv64")).toThrow(/no seccomp filter for architecture riscv64/);
  });
});
