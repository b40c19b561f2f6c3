import { closeSync, openSync, readlinkSync, readSync } from 'node:fs';
import { readProcText } from '../proc.js';

/**
 * One line of `/proc/<pid>/task/<tid>/syscall` for a thread blocked in a syscall (T6):
 * the syscall number, its six arguments and the user stack pointer. Numbers are bigints:
 * arguments are full 64-bit registers.
 */
export interface BlockedSyscall {
  readonly nr: number;
  readonly args: readonly [bigint, bigint, bigint, bigint, bigint, bigint];
  readonly sp: bigint;
}

/**
 * Parses a `/proc/<pid>/task/<tid>/syscall` line. `'running'` when the kernel says the
 * thread is on a CPU (or runnable): it is not waiting. `null` when the thread is blocked
 * outside any syscall (`-1 sp pc`) or the line is malformed.
 *
 * @example
 * ```ts
 * parseSyscallLine('270 0x1 0x7ffd0685b380 0x0 0x0 0x0 0x7ffd0685b2b0 0x7ffd0685b270 0x7f62db268aec');
 * // { nr: 270, args: [1n, 0x7ffd0685b380n, 0n, 0n, 0n, 0x7ffd0685b2b0n], sp: 0x7ffd0685b270n }
 * ```
 */
export function parseSyscallLine(line: string): BlockedSyscall | 'running' | null {
  const text = line.trim();
  if (text === 'running') return 'running';
  const parts = text.split(' ');
  if (parts.length !== 9) return null;
  const nr = Number(parts[0]);
  if (!Number.isInteger(nr) || nr < 0) return null;
  try {
    const n = parts.slice(1).map((p) => BigInt(p));
    const [a0, a1, a2, a3, a4, a5, sp] = n as [bigint, bigint, bigint, bigint, bigint, bigint, bigint];
    return { nr, args: [a0, a1, a2, a3, a4, a5], sp };
  } catch {
    return null;
  }
}

/**
 * The target of a /proc symlink (`/proc/<pid>/task/<tid>/fd/<n>`), or `null`.
 *
 * @example
 * ```ts
 * readLink(`/proc/${pid}/task/${pid}/fd/0`); // '/dev/pts/7', 'pipe:[123]', …
 * ```
 */
export function readLink(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}

/**
 * `length` bytes of process `pid`'s memory at `address` (via `/proc/<pid>/mem`, which
 * needs ptrace rights: root, or an ancestor of the same user). `null` on any failure,
 * including a short read.
 *
 * @example
 * ```ts
 * const readfds = readMemory(pid, call.args[1], 128); // the fd_set pselect6 waits on
 * ```
 */
export function readMemory(pid: number, address: bigint, length: number): Buffer | null {
  if (address <= 0n || length <= 0) return null;
  let fd: number;
  try {
    fd = openSync(`/proc/${pid}/mem`, 'r');
  } catch {
    return null;
  }
  try {
    const buf = Buffer.alloc(length);
    const position = address <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(address) : address;
    const n = readSync(fd, buf, 0, length, position);
    return n === length ? buf : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * The scheduler's count of how often thread `tid` was put on a CPU (`schedstat` field 3;
 * voluntary + involuntary context switches from `status` where schedstat is missing).
 * It grows every time the thread wakes, so a caller can tell a wait that began after
 * its input from one that existed before (T5). `null` when the thread is gone.
 *
 * @example
 * ```ts
 * readWakeups(pid, tid); // 1234
 * ```
 */
export function readWakeups(pid: number, tid: number): number | null {
  const sched = readProcText(`/proc/${pid}/task/${tid}/schedstat`);
  const runs = sched === null ? Number.NaN : Number(sched.trim().split(' ')[2]);
  if (Number.isInteger(runs)) return runs;
  const status = readProcText(`/proc/${pid}/task/${tid}/status`);
  if (status === null) return null;
  const voluntary = /^voluntary_ctxt_switches:\s*(\d+)/m.exec(status)?.[1];
  const involuntary = /^nonvoluntary_ctxt_switches:\s*(\d+)/m.exec(status)?.[1];
  if (voluntary === undefined || involuntary === undefined) return null;
  return Number(voluntary) + Number(involuntary);
}
