import { arch, endianness } from "node:os";
import { InfraError } from "../../core/errors.js";

/**
 * The seccomp filter every bwrap sandbox runs under (`bwrap --seccomp FD`): a classic-BPF program (an array of
 * `struct sock_filter`) that refuses, with EPERM, the syscalls that let one process of the sandbox reach into another
 * (ptrace, process_vm_readv/writev, pidfd_getfd: a command could otherwise freeze or rewrite the exec agent, which runs
 * as the same user) and the usual container denials of kernel attack surface no harness needs (kexec, bpf,
 * perf_event_open, userfaultfd, the keyring calls). Everything else is allowed.
 *
 * Pitfalls it handles:
 * - the syscall number means nothing without the ABI: `seccomp_data.arch` is checked first, and a foreign ABI (i386
 *   through `int 0x80` on x86_64, 32-bit ARM on aarch64) gets EPERM for every call, since its numbers differ;
 * - x32 shares AUDIT_ARCH_X86_64 and marks its numbers with bit 30 (`__X32_SYSCALL_BIT`): x32's ptrace is 0x40000000
 *   + 521, which a plain "nr == 101" check would let through. Every number with that bit is refused.
 */

// <linux/filter.h>, <linux/seccomp.h>, <linux/audit.h>
const BPF_LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JGE_K = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const BPF_RET_K = 0x06; // BPF_RET | BPF_K
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
/** Offsets in struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }. */
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const X32_SYSCALL_BIT = 0x40000000;

export const DENIED_SYSCALLS = [
  "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
  "kexec_load", "kexec_file_load", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
] as const;
export type DeniedSyscall = (typeof DENIED_SYSCALLS)[number];

export interface SeccompArch {
  /** AUDIT_ARCH_* of the native 64-bit ABI. */
  auditArch: number;
  /** Whether numbers with __X32_SYSCALL_BIT reach this ABI (x86_64 only). */
  x32: boolean;
  numbers: Record<DeniedSyscall, number>;
}

/** Syscall numbers from the kernel's tables (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/unistd.h). */
export const SECCOMP_ARCHES: Record<string, SeccompArch> = {
  x64: {
    auditArch: 0xc000003e, // EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
    x32: true,
    numbers: { ptrace: 101, process_vm_readv: 310, process_vm_writev: 311, pidfd_getfd: 438, kexec_load: 246, kexec_file_load: 320, bpf: 321, perf_event_open: 298, userfaultfd: 323, keyctl: 250, add_key: 248, request_key: 249 },
  },
  arm64: {
    auditArch: 0xc00000b7, // EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
    x32: false,
    numbers: { ptrace: 117, process_vm_readv: 270, process_vm_writev: 271, pidfd_getfd: 438, kexec_load: 104, kexec_file_load: 294, bpf: 280, perf_event_open: 241, userfaultfd: 282, keyctl: 219, add_key: 217, request_key: 218 },
  },
};

export interface SockFilter {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

const stmt = (code: number, k: number): SockFilter => ({ code, jt: 0, jf: 0, k });
const jump = (code: number, k: number, jt: number, jf: number): SockFilter => ({ code, jt, jf, k });

/** The filter's instructions for one architecture (exported for the unit test's interpreter). */
export function seccompProgram(a: SeccompArch): SockFilter[] {
  const deny = SECCOMP_RET_ERRNO | EPERM;
  const numbers = DENIED_SYSCALLS.map((name) => a.numbers[name]);
  const p: SockFilter[] = [
    stmt(BPF_LD_W_ABS, OFFSET_ARCH),
    jump(BPF_JEQ_K, a.auditArch, 1, 0),
    stmt(BPF_RET_K, deny), // a foreign ABI: its numbers are not the ones below
    stmt(BPF_LD_W_ABS, OFFSET_NR),
  ];
  if (a.x32) p.push(jump(BPF_JGE_K, X32_SYSCALL_BIT, 0, 1), stmt(BPF_RET_K, deny));
  // Each match jumps to the final deny: past the remaining comparisons and the allow.
  numbers.forEach((nr, i) => p.push(jump(BPF_JEQ_K, nr, numbers.length - i, 0)));
  p.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW), stmt(BPF_RET_K, deny));
  return p;
}

/** The program as the kernel reads it: 8 bytes per instruction in the machine's byte order. */
export function encodeSeccomp(program: SockFilter[]): Buffer {
  const buf = Buffer.alloc(program.length * 8);
  const le = endianness() === "LE";
  program.forEach((ins, i) => {
    const o = i * 8;
    if (le) buf.writeUInt16LE(ins.code, o);
    else buf.writeUInt16BE(ins.code, o);
    buf.writeUInt8(ins.jt, o + 2);
    buf.writeUInt8(ins.jf, o + 3);
    if (le) buf.writeUInt32LE(ins.k >>> 0, o + 4);
    else buf.writeUInt32BE(ins.k >>> 0, o + 4);
  });
  return buf;
}

/** The compiled filter for the machine we run on; an unknown architecture is an infrastructure error (fail closed). */
export function sandboxSeccomp(machine: string = arch()): Buffer {
  const a = SECCOMP_ARCHES[machine];
  if (!a) throw new InfraError("sandbox_seccomp_arch", `no seccomp filter for architecture ${machine} (known: ${Object.keys(SECCOMP_ARCHES).join(", ")})`);
  return encodeSeccomp(seccompProgram(a));
}
