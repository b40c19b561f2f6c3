import { realpathSync, statSync } from 'node:fs';
import { isDeadState } from '../identity.js';
import { hasProcfs, type ProcStat, readProcStat } from '../proc.js';
import type { ProcessIdentity } from '../types.js';
import { foregroundMembers, type GroupMember } from './foreground-group.js';
import { type ThreadVerdict, type TtyFacts, threadEvidence } from './stdin-evidence.js';
import { type InputSyscall, type InputSyscallTable, inputSyscallTable } from './syscall-table.js';

/**
 * Why a probe proved nothing (T6). `unsupported-platform`: not Linux with /proc and a
 * known syscall ABI. `unreadable`: the tty or a /proc file could not be read (EACCES,
 * vanished). `root-gone` / `root-changed`: the root process exited or its pid now names
 * another process (before or after the scan). `not-this-tty`: the root's controlling
 * terminal is another one, or the group waits for input on a pipe or another terminal.
 * `no-foreground`: the terminal has no foreground group. `foreground-changed`: the
 * foreground group changed during the scan. `busy`: a member thread is running.
 * `not-waiting`: every thread is blocked in something that is not an input wait.
 */
export type StdinProofFailure =
  | 'unsupported-platform'
  | 'unreadable'
  | 'root-gone'
  | 'root-changed'
  | 'not-this-tty'
  | 'no-foreground'
  | 'foreground-changed'
  | 'busy'
  | 'not-waiting';

/**
 * The verdict of one probe. `proven`: thread `tid` of process `pid` (a member of the
 * terminal's foreground process group) was blocked in `via` waiting for input on this
 * terminal. `wakeups` counts how often that thread has been scheduled so far: a caller
 * that probed before writing input can require `tid` to differ or `wakeups` to have grown,
 * so that a wait which existed before the input is not taken as evidence (T5).
 */
export type StdinProof =
  | {
      readonly proven: true;
      readonly pid: number;
      readonly tid: number;
      readonly via: InputSyscall;
      readonly wakeups: number;
    }
  | { readonly proven: false; readonly reason: StdinProofFailure };

/** The terminal to probe: its session root (the shell) and its slave path. */
export interface StdinProbeTarget {
  /** The process the terminal was spawned with (the session leader, e.g. the shell). */
  readonly root: ProcessIdentity;
  /** The slave side of the pty, e.g. `/dev/pts/7`. */
  readonly ttyPath: string;
}

/**
 * Whether this host can prove `stdin_read` (T6): Linux with /proc and a syscall ABI we
 * know (x64, arm64). Elsewhere {@link probeStdinRead} always answers
 * `unsupported-platform` and the terminal falls back to `inferred_idle`.
 *
 * @example
 * ```ts
 * const reason = stdinProofSupported() ? 'stdin_read' : 'inferred_idle';
 * ```
 */
export function stdinProofSupported(): boolean {
  return process.platform === 'linux' && hasProcfs() && inputSyscallTable(process.arch) !== null;
}

/**
 * Proves — or fails to prove — that the terminal's foreground process group is blocked
 * waiting for input on THIS terminal (T6). Linux only: reads the root's stat (identity,
 * controlling tty, field 8 `tpgid`), then every thread of every member of that group
 * (found among the root's descendants, see {@link foregroundMembers}):
 * a thread proves the wait when it sleeps in read/readv, select/pselect6, poll/ppoll or
 * epoll_wait/epoll_pwait(2) on an fd that is this terminal (fd_set and pollfd arrays are
 * read from `/proc/<pid>/mem`, epoll sets from `fdinfo`), and its own fd 0 is this
 * terminal. A pipe, another terminal, a stopped or running thread, or an unreadable /proc
 * proves nothing. After the scan the root's identity and `tpgid` are read again; a change
 * discards the verdict. Never throws; never fakes a proof on other platforms.
 *
 * The caller's half of T6: a proof describes the moment of the scan only. Before
 * publishing `stdin_read` the terminal service must re-read its own state — no output
 * arrived after the probe started and the terminal was not closed or exited meanwhile —
 * and (T5) only count a probe that started after the input was fully written, whose
 * `tid` differs from, or whose `wakeups` exceeds, a proof taken just before the write: a
 * probe right after writing `read x` to an idle bash still sees the prompt's pselect6
 * about a quarter of the time, with `wakeups` unchanged.
 *
 * @example
 * ```ts
 * const proof = probeStdinRead({ root: shell.identity, ttyPath: '/dev/pts/7' });
 * if (proof.proven) console.log(`pid ${proof.pid} waits in ${proof.via}`);
 * else console.log(`not proven: ${proof.reason}`);
 * ```
 */
export function probeStdinRead(target: StdinProbeTarget): StdinProof {
  const table = stdinProofSupported() ? inputSyscallTable(process.arch) : null;
  if (table === null) return fail('unsupported-platform');
  const root = readProcStat(target.root.pid);
  if (root === null || isDeadState(root.state)) return fail('root-gone');
  if (target.root.startTime !== null && root.startTime !== target.root.startTime) return fail('root-changed');
  // After the root: a dead session leader takes its pts (and so its path) with it.
  const tty = readTtyFacts(target.ttyPath);
  if (tty === null) return fail('unreadable');
  if (root.ttyNr !== tty.ttyNr) return fail('not-this-tty');
  if (root.tpgid <= 0) return fail('no-foreground');
  const verdict = scanGroup(root, tty, table);
  // T6: a slow scan must not publish a stale verdict.
  const after = readProcStat(target.root.pid);
  if (after === null || isDeadState(after.state)) return fail('root-gone');
  if (after.startTime !== root.startTime) return fail('root-changed');
  if (after.tpgid !== root.tpgid) return fail('foreground-changed');
  return verdict;
}

// Every thread of the foreground group, in the order foregroundMembers finds them.
function scanGroup(root: ProcStat, tty: TtyFacts, table: InputSyscallTable): StdinProof {
  const seen: ThreadVerdict[] = [];
  for (const member of foregroundMembers(root)) {
    const proof = scanMember(member, tty, table, seen);
    if (proof !== null) return proof;
  }
  return fail(failureOf(seen));
}

// Each thread of one member; the first proving thread wins, the rest go to `seen`.
function scanMember(
  { stat, tids }: GroupMember,
  tty: TtyFacts,
  table: InputSyscallTable,
  seen: ThreadVerdict[],
): StdinProof | null {
  if (tids === null) {
    seen.push({ kind: 'unreadable' });
    return null;
  }
  // Stopped (T) or traced (t): it will not consume input until continued.
  if (stat.state === 'T' || stat.state === 't') {
    seen.push({ kind: 'idle' });
    return null;
  }
  for (const tid of tids) {
    const v = threadEvidence(stat.pid, tid, stat.ttyNr, tty, table);
    if (v.kind === 'proven') return { proven: true, pid: stat.pid, tid, via: v.via, wakeups: v.wakeups };
    seen.push(v);
  }
  return null;
}

// The most telling reason among the threads that proved nothing.
function failureOf(seen: readonly ThreadVerdict[]): StdinProofFailure {
  const kinds = new Set(seen.map((v) => v.kind));
  if (kinds.has('running')) return 'busy';
  if (kinds.has('elsewhere')) return 'not-this-tty';
  if (kinds.has('unreadable')) return 'unreadable';
  return 'not-waiting';
}

// The slave as /proc names it: canonical path, devpts inode and device, tty_nr encoding.
function readTtyFacts(ttyPath: string): TtyFacts | null {
  try {
    // /dev/pts/N is already what readlink shows; anything else is canonicalised.
    const path = /^\/dev\/pts\/\d+$/.test(ttyPath) ? ttyPath : realpathSync(ttyPath);
    const st = statSync(path, { bigint: true });
    if (!st.isCharacterDevice()) return null;
    const fsDev = decodeDev(st.dev);
    const rdev = decodeDev(st.rdev);
    // Kernel-internal dev_t (fdinfo `sdev:`): major << 20 | minor.
    const sdev = (fsDev.major << 20n) | fsDev.minor;
    // new_encode_dev (stat `tty_nr`): minor low byte, major, then the rest of minor.
    const ttyNr = (rdev.minor & 0xffn) | (rdev.major << 8n) | ((rdev.minor & ~0xffn) << 12n);
    return { path, ino: st.ino, sdev, ttyNr: Number(ttyNr) };
  } catch {
    return null;
  }
}

// glibc's dev_t layout (what Node's stat returns) → major, minor.
function decodeDev(dev: bigint): { major: bigint; minor: bigint } {
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & 0xffff_f000n);
  const minor = (dev & 0xffn) | ((dev >> 12n) & 0xffff_ff00n);
  return { major, minor };
}

function fail(reason: StdinProofFailure): StdinProof {
  return { proven: false, reason };
}
