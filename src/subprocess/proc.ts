import { closeSync, existsSync, openSync, readdirSync, readSync } from 'node:fs';
import { TREE_MARKER_ENV } from './marker.js';

/**
 * The fields of `/proc/<pid>/stat` the tree kill needs (S4). `startTime` is field 22
 * (clock ticks since boot): together with `pid` it names one process for its whole life.
 */
export interface ProcStat {
  readonly pid: number;
  readonly comm: string;
  /** One char: R, S, D, Z, T, t, X, I, … */
  readonly state: string;
  readonly ppid: number;
  readonly pgrp: number;
  readonly session: number;
  readonly ttyNr: number;
  readonly tpgid: number;
  /** Field 9, the kernel's PF_* flags: {@link isExiting} reads PF_EXITING. */
  readonly flags: number;
  readonly startTime: number;
}

let procfs: boolean | undefined;

/**
 * Whether this host has a Linux-style procfs (S4: otherwise the tree kill falls back to `ps`).
 *
 * @example
 * ```ts
 * const proof = hasProcfs() ? 'proc' : 'ps';
 * ```
 */
export function hasProcfs(): boolean {
  procfs ??= existsSync('/proc/self/stat');
  return procfs;
}

/**
 * Parses one `/proc/<pid>/stat` line. `comm` may hold spaces and parentheses, so the
 * fields are split after the LAST `)`. Returns `null` on a malformed line.
 *
 * @example
 * ```ts
 * parseProcStat('42 (a b) c) S 1 42 42 0 -1 ...')?.comm; // 'a b) c'
 * ```
 */
export function parseProcStat(line: string): ProcStat | null {
  const open = line.indexOf('(');
  const close = line.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const pid = Number(line.slice(0, open).trim());
  // Fields 3.. follow ") "; index i of `rest` is field i + 3.
  const rest = line.slice(close + 2).split(' ');
  const state = rest[0];
  const startTime = Number(rest[19]);
  if (!Number.isInteger(pid) || state === undefined || state.length !== 1 || !Number.isFinite(startTime)) {
    return null;
  }
  return {
    pid,
    comm: line.slice(open + 1, close),
    state,
    ppid: Number(rest[1]),
    pgrp: Number(rest[2]),
    session: Number(rest[3]),
    ttyNr: Number(rest[4]),
    tpgid: Number(rest[5]),
    flags: Number(rest[6]),
    startTime,
  };
}

/** The kernel's PF_EXITING (include/linux/sched.h): set as the process enters do_exit. */
const PF_EXITING = 0x4;

/**
 * Whether the process is on its way out: past the start of its exit (it runs none of its
 * program any more) but not yet a zombie. Such a process no longer shows its cgroup: from the
 * kernel's cgroup_exit on, /proc/<pid>/cgroup reads the root (`0::/`, measured).
 *
 * @example
 * ```ts
 * const stat = readProcStat(pid);
 * if (stat !== null && isExiting(stat)) console.log('exiting');
 * ```
 */
export function isExiting(stat: ProcStat): boolean {
  return (stat.flags & PF_EXITING) !== 0;
}

/**
 * Whether a SIGKILL is pending for `pid` (`ShdPnd` or `SigPnd` of /proc/<pid>/status): it dies
 * as soon as it runs again, which on a loaded machine may be a while. False when it is gone.
 *
 * @example
 * ```ts
 * killCgroup(tree);
 * cgroupPids(tree).filter((pid) => !killPending(pid)); // what the kill has not reached
 * ```
 */
export function killPending(pid: number): boolean {
  const text = readProcText(`/proc/${pid}/status`);
  if (text === null) return false;
  const SIGKILL_BIT = 1n << 8n; // signal 9
  return [/^ShdPnd:\s*([0-9a-f]+)/m, /^SigPnd:\s*([0-9a-f]+)/m].some((re) => {
    const hex = re.exec(text)?.[1];
    return hex !== undefined && (BigInt(`0x${hex}`) & SIGKILL_BIT) !== 0n;
  });
}

/**
 * Reads `/proc/<pid>/stat`; `null` when the process is gone (or there is no /proc).
 *
 * @example
 * ```ts
 * const st = readProcStat(child.pid!);
 * if (st && st.state !== 'Z') console.log('alive since tick', st.startTime);
 * ```
 */
export function readProcStat(pid: number): ProcStat | null {
  const bytes = readProcFile(`/proc/${pid}/stat`);
  // null: ENOENT/ESRCH, the process vanished, which is normal.
  return bytes === null ? null : parseProcStat(bytes.toString('latin1'));
}

/**
 * Every pid currently listed in /proc (thread-group leaders only); `[]` without /proc.
 *
 * @example
 * ```ts
 * const everyone = listPids().map(readProcStat).filter((s) => s !== null);
 * ```
 */
export function listPids(): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const name of names) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const pid = Number(name);
    if (Number.isInteger(pid)) pids.push(pid);
  }
  return pids;
}

/**
 * The value of one variable in `/proc/<pid>/environ` (the env the process was exec'd
 * with). `null` when unset, or when the file is unreadable (gone, another user, a zombie);
 * `undefined` when the environ is empty, which says nothing (a process mid-exec, a kernel thread).
 *
 * @example
 * ```ts
 * readEnvironValue(pid, 'TETHER_TREE'); // '1234.xyz' or null
 * ```
 */
export function readEnvironValue(pid: number, name: string): string | null | undefined {
  const buf = readProcFile(`/proc/${pid}/environ`);
  if (buf === null) return null;
  // Empty: a process in the middle of execve (or a kernel thread) shows no environ for a moment.
  if (buf.length === 0) return undefined;
  const key = Buffer.from(`${name}=`, 'latin1');
  let at = buf.subarray(0, key.length).equals(key) ? 0 : -1;
  if (at < 0) {
    const hit = buf.indexOf(Buffer.concat([Buffer.from([0]), key]));
    if (hit < 0) return null;
    at = hit + 1;
  }
  const start = at + key.length;
  const end = buf.indexOf(0, start);
  return buf.toString('utf8', start, end < 0 ? buf.length : end);
}

/**
 * Pids of live (non-zombie) processes whose `TETHER_TREE` marker starts with `prefix`.
 * Used by tests and operators to prove nothing a host started is still running (S4, D3).
 *
 * @example
 * ```ts
 * expect(listTaggedProcesses(treeIdPrefix())).toEqual([]);
 * ```
 */
export function listTaggedProcesses(prefix: string): number[] {
  const found: number[] = [];
  for (const pid of listPids()) {
    if (pid === process.pid) continue;
    const stat = readProcStat(pid);
    if (stat === null || stat.state === 'Z' || stat.state === 'X') continue;
    const tag = readEnvironValue(pid, TREE_MARKER_ENV);
    if (tag?.startsWith(prefix)) found.push(pid);
  }
  return found;
}

/**
 * The text of a small /proc file (latin1), or `null` when it cannot be read (gone, EACCES).
 *
 * @example
 * ```ts
 * readProcText(`/proc/${pid}/task/${tid}/syscall`); // '0 0x0 0x55e2… …\n' or 'running\n'
 * ```
 */
export function readProcText(path: string): string | null {
  return readProcFile(path)?.toString('latin1') ?? null;
}

let scratch = Buffer.allocUnsafe(16 * 1024);

// readFileSync costs ~3x more per /proc file (fstat, allocation): scans read hundreds of
// them, so read into one reused buffer instead. The view is valid until the next call.
function readProcFile(path: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    let length = 0;
    for (;;) {
      if (length === scratch.length) {
        const grown = Buffer.allocUnsafe(scratch.length * 2);
        scratch.copy(grown, 0, 0, length);
        scratch = grown;
      }
      const n = readSync(fd, scratch, length, scratch.length - length, null);
      if (n === 0) return scratch.subarray(0, length);
      length += n;
    }
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}
