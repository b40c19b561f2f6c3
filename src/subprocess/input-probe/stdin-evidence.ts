import { readProcText } from '../proc.js';
import { type BlockedSyscall, parseSyscallLine, readLink, readMemory, readWakeups } from './proc-thread.js';
import type { InputSyscall, InputSyscallTable } from './syscall-table.js';

/** The terminal a probe is about, as the kernel names it in /proc (T6). */
export interface TtyFacts {
  /** Canonical slave path, e.g. `/dev/pts/7`: what `readlink /proc/…/fd/N` shows. */
  readonly path: string;
  /** Inode of the slave in devpts (the `ino:` of an epoll fdinfo line). */
  readonly ino: bigint;
  /** devpts' device in the kernel's internal encoding (the `sdev:` of an epoll fdinfo line). */
  readonly sdev: bigint;
  /** The slave's device number as `/proc/<pid>/stat` field 7 (`tty_nr`) encodes it. */
  readonly ttyNr: number;
}

/** What one thread of the foreground group shows (T6). */
export type ThreadVerdict =
  | { readonly kind: 'proven'; readonly via: InputSyscall; readonly wakeups: number }
  /** On a CPU or runnable, or it left its syscall while we looked: not waiting. */
  | { readonly kind: 'running' }
  /** Waits for input, but its fd 0 or the fd it waits on is not this terminal. */
  | { readonly kind: 'elsewhere' }
  /** /proc refused (EACCES) or the thread vanished mid-read. */
  | { readonly kind: 'unreadable' }
  /** Blocked in something that is not an input wait (sleep, futex, wait4, stopped, …). */
  | { readonly kind: 'idle' };

/** Most fds a select/poll wait is searched for; beyond this the wait proves nothing. */
const MAX_FDS = 65_536;
const POLLIN = 0x1;
const POLLRDNORM = 0x40;
const EPOLLIN = 0x1n;

/**
 * Decides whether thread `tid` of process `pid` is blocked waiting for input on `tty`
 * (T6): its syscall is an input wait of `table`, its own fd 0 is this terminal, the fd it
 * waits on is this terminal, and afterwards its syscall line and its wakeup count are
 * unchanged (it did not run while we looked, so all of that is one wait).
 * `memberTtyNr` (the member's `tty_nr`) lets an fd opened as `/dev/tty` count when the
 * member's controlling terminal is this one.
 *
 * @example
 * ```ts
 * const v = threadEvidence(pid, tid, stat.ttyNr, tty, inputSyscallTable('x64')!);
 * if (v.kind === 'proven') console.log(`${tid} waits in ${v.via}`);
 * ```
 */
export function threadEvidence(
  pid: number,
  tid: number,
  memberTtyNr: number,
  tty: TtyFacts,
  table: InputSyscallTable,
): ThreadVerdict {
  const syscallPath = `/proc/${pid}/task/${tid}/syscall`;
  const first = readProcText(syscallPath);
  if (first === null) return { kind: 'unreadable' };
  const call = parseSyscallLine(first);
  if (call === 'running') return { kind: 'running' };
  const via = call === null ? undefined : table.get(call.nr);
  // A stack below 4 GiB means a 32-bit (compat) task: its numbers are another ABI's.
  if (call === null || via === undefined || call.sp <= 0xffff_ffffn) return { kind: 'idle' };
  const isTty = (fd: number): boolean | null => {
    const link = readLink(`/proc/${pid}/task/${tid}/fd/${fd}`);
    if (link === null) return null;
    return link === tty.path || (link === '/dev/tty' && memberTtyNr === tty.ttyNr);
  };
  // Never scheduled between `before` and `after` (and the same line again): everything
  // read in between describes one and the same wait.
  const before = readWakeups(pid, tid);
  // T6: the thread's own fd 0 must be this terminal; a pipe or another terminal proves nothing.
  const fd0 = isTty(0);
  const hit = fd0 === true ? waitsOnTty(pid, tid, via, call, tty, isTty) : fd0;
  const again = readProcText(syscallPath);
  const after = readWakeups(pid, tid);
  if (again === null || before === null || after === null) return { kind: 'unreadable' };
  if (again !== first || after !== before) return { kind: 'running' };
  if (hit === true) return { kind: 'proven', via, wakeups: after };
  return hit === false ? { kind: 'elsewhere' } : { kind: 'unreadable' };
}

// Whether the blocked call waits for input on a fd that is this tty; null = unreadable.
function waitsOnTty(
  pid: number,
  tid: number,
  via: InputSyscall,
  call: BlockedSyscall,
  tty: TtyFacts,
  isTty: (fd: number) => boolean | null,
): boolean | null {
  const [a0, a1] = call.args;
  switch (via) {
    case 'read':
      return a0 < 0n || a0 > 0x7fff_ffffn ? false : isTty(Number(a0));
    case 'select':
      return selectWaitsOnTty(pid, a0, a1, isTty);
    case 'poll':
      return pollWaitsOnTty(pid, a0, a1, isTty);
    case 'epoll':
      return epollWaitsOnTty(pid, tid, a0, tty, isTty);
  }
}

// select/pselect6(nfds, readfds, …): some fd below nfds whose readfds bit is set is the tty.
function selectWaitsOnTty(
  pid: number,
  nfds: bigint,
  readfds: bigint,
  isTty: (fd: number) => boolean | null,
): boolean | null {
  if (readfds === 0n || nfds <= 0n || nfds > BigInt(MAX_FDS)) return false;
  const n = Number(nfds);
  // fd_set is an array of longs; on little-endian x64/arm64 bit fd sits in byte fd >> 3.
  const bits = readMemory(pid, readfds, Math.ceil(n / 8));
  if (bits === null) return null;
  let unreadable = false;
  for (let fd = 0; fd < n; fd++) {
    if (((bits[fd >> 3] ?? 0) & (1 << (fd & 7))) === 0) continue;
    const hit = isTty(fd);
    if (hit === true) return true;
    if (hit === null) unreadable = true;
  }
  return unreadable ? null : false;
}

// poll/ppoll(fds, nfds, …): struct pollfd { int fd; short events; short revents; } = 8 bytes.
function pollWaitsOnTty(
  pid: number,
  fds: bigint,
  nfds: bigint,
  isTty: (fd: number) => boolean | null,
): boolean | null {
  if (fds === 0n || nfds <= 0n || nfds > BigInt(MAX_FDS)) return false;
  const n = Number(nfds);
  const table = readMemory(pid, fds, n * 8);
  if (table === null) return null;
  let unreadable = false;
  for (let i = 0; i < n; i++) {
    const fd = table.readInt32LE(i * 8);
    const events = table.readInt16LE(i * 8 + 4);
    if (fd < 0 || (events & (POLLIN | POLLRDNORM)) === 0) continue;
    const hit = isTty(fd);
    if (hit === true) return true;
    if (hit === null) unreadable = true;
  }
  return unreadable ? null : false;
}

// epoll_wait family(epfd, …): the epoll's fdinfo lists `tfd: N events: X … ino:I sdev:D`;
// an EPOLLIN entry whose file is the tty's inode on devpts and whose fd is the tty.
function epollWaitsOnTty(
  pid: number,
  tid: number,
  epfd: bigint,
  tty: TtyFacts,
  isTty: (fd: number) => boolean | null,
): boolean | null {
  if (epfd < 0n || epfd > 0x7fff_ffffn) return false;
  const info = readProcText(`/proc/${pid}/task/${tid}/fdinfo/${epfd}`);
  if (info === null) return null;
  let unreadable = false;
  for (const line of info.split('\n')) {
    if (!line.startsWith('tfd:')) continue;
    const fd = /^tfd:\s*(\d+)/.exec(line)?.[1];
    const events = /\bevents:\s*([0-9a-f]+)/.exec(line)?.[1];
    const ino = /\bino:([0-9a-f]+)/.exec(line)?.[1];
    const sdev = /\bsdev:([0-9a-f]+)/.exec(line)?.[1];
    if (fd === undefined || events === undefined || ino === undefined || sdev === undefined) continue;
    if ((BigInt(`0x${events}`) & EPOLLIN) === 0n) continue;
    if (BigInt(`0x${ino}`) !== tty.ino || BigInt(`0x${sdev}`) !== tty.sdev) continue;
    const hit = isTty(Number(fd));
    if (hit === true) return true;
    if (hit === null) unreadable = true;
  }
  return unreadable ? null : false;
}
