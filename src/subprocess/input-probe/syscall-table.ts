/**
 * How a blocked syscall can wait for terminal input (T6). `read` covers read and readv
 * (arg0 = fd); `select` covers select and pselect6 (arg0 = nfds, arg1 = readfds);
 * `poll` covers poll and ppoll (arg0 = pollfd array, arg1 = nfds); `epoll` covers
 * epoll_wait, epoll_pwait and epoll_pwait2 (arg0 = epoll fd).
 */
export type InputSyscall = 'read' | 'select' | 'poll' | 'epoll';

/** Syscall number → how it waits for input, for one kernel ABI. */
export type InputSyscallTable = ReadonlyMap<number, InputSyscall>;

// x86_64, from /usr/include/x86_64-linux-gnu/asm/unistd_64.h (checked on kernel 6.18):
// read 0, poll 7, readv 19, select 23, epoll_wait 232, pselect6 270, ppoll 271,
// epoll_pwait 281, epoll_pwait2 441.
const X64: InputSyscallTable = new Map<number, InputSyscall>([
  [0, 'read'],
  [19, 'read'],
  [7, 'poll'],
  [271, 'poll'],
  [23, 'select'],
  [270, 'select'],
  [232, 'epoll'],
  [281, 'epoll'],
  [441, 'epoll'],
]);

// arm64 uses the generic table, /usr/include/asm-generic/unistd.h: read 63, readv 65,
// pselect6 72, ppoll 73, epoll_pwait 22, epoll_pwait2 441. It has no plain select, poll
// or epoll_wait (libc implements them with the p-variants).
const ARM64: InputSyscallTable = new Map<number, InputSyscall>([
  [63, 'read'],
  [65, 'read'],
  [73, 'poll'],
  [72, 'select'],
  [22, 'epoll'],
  [441, 'epoll'],
]);

/**
 * The input-wait syscalls of the 64-bit kernel ABI for `arch` (a `process.arch` value),
 * or `null` when we do not know that ABI — then no stdin proof is attempted (T6: other
 * platforms do not fake it). A 32-bit (compat) process on a 64-bit kernel reports
 * 32-bit syscall numbers; the probe recognises and skips such threads.
 *
 * @example
 * ```ts
 * inputSyscallTable('x64')?.get(270); // 'select' (pselect6: bash idle at its prompt)
 * inputSyscallTable('ia32'); // null
 * ```
 */
export function inputSyscallTable(arch: string): InputSyscallTable | null {
  if (arch === 'x64') return X64;
  if (arch === 'arm64') return ARM64;
  return null;
}
