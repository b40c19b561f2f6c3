import { hasProcfs, readProcStat } from './proc.js';
import type { ProcessIdentity } from './types.js';

/**
 * The identity of a process now: its pid plus its start time from /proc (S4). `null` only
 * when the pid names no process. A zombie still has an identity — its pid cannot be reused
 * until it is reaped, and a child that exits fast is often one before `spawn()` returns —
 * so ask `isSameLiveProcess` for liveness. Without /proc the start time is `null` (the
 * weaker guarantee of the `ps` fallback).
 *
 * @example
 * ```ts
 * const child = spawn('sleep', ['10'], { detached: true });
 * const id = readIdentity(child.pid!); // { pid, startTime: 123456 }
 * ```
 */
export function readIdentity(pid: number): ProcessIdentity | null {
  if (!hasProcfs()) return probeWithoutProcfs(pid) ? { pid, startTime: null } : null;
  const stat = readProcStat(pid);
  return stat === null ? null : { pid, startTime: stat.startTime };
}

/**
 * Whether `identity` still names a running process: /proc readable, same start time, not a
 * zombie (a zombie has exited; only its exit status is left). Never decided from
 * `kill(pid, 0)` where /proc exists: that answers yes for zombies and for reused pids.
 *
 * @example
 * ```ts
 * if (!isSameLiveProcess(handle.identity)) console.log('leader is gone');
 * ```
 */
export function isSameLiveProcess(identity: ProcessIdentity): boolean {
  if (!hasProcfs()) return probeWithoutProcfs(identity.pid);
  const stat = readProcStat(identity.pid);
  if (stat === null || isDeadState(stat.state)) return false;
  return identity.startTime === null || stat.startTime === identity.startTime;
}

/**
 * Sends `signal` to exactly the process `identity` names, re-reading /proc immediately
 * before `process.kill` so that a reused pid is never signalled (S4). Returns `false` —
 * and sends nothing — when the start time changed, the process is a zombie or gone.
 * ESRCH from the kill itself (it died in between) and EPERM (it belongs to someone we may
 * not signal) are swallowed and return `false`; the tree kill then reports it as escaped.
 *
 * Without /proc (macOS) there is no start time to compare: the signal goes to the pid
 * as-is, so a pid reused between our last observation and now could be hit.
 *
 * @example
 * ```ts
 * if (!signalIdentity(id, 'SIGTERM')) console.log('already gone, nothing sent');
 * ```
 */
export function signalIdentity(identity: ProcessIdentity, signal: NodeJS.Signals): boolean {
  if (identity.pid <= 0 || identity.pid === process.pid) return false;
  if (hasProcfs() && !isSameLiveProcess(identity)) return false;
  try {
    process.kill(identity.pid, signal);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH' || code === 'EPERM') return false;
    throw err;
  }
}

/**
 * Sends `signal` to the process group that `leader` leads (its pid is the pgid), only while
 * the leader itself is the same live process: a group number is never signalled on a
 * stale identity (S4, T8). Returns whether the signal was sent.
 *
 * @example
 * ```ts
 * signalProcessGroup(handle.identity, 'SIGINT'); // J7: interrupt the job's foreground group
 * ```
 */
export function signalProcessGroup(leader: ProcessIdentity, signal: NodeJS.Signals): boolean {
  if (leader.pid <= 1 || leader.pid === process.pid || !isSameLiveProcess(leader)) return false;
  try {
    process.kill(-leader.pid, signal);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ESRCH' || code === 'EPERM') return false;
    throw err;
  }
}

/** True for states in which a process has already exited (zombie, dead). */
export function isDeadState(state: string): boolean {
  return state === 'Z' || state === 'X' || state === 'x';
}

// Only for hosts without /proc: signal 0 says "a process with this pid exists" (EPERM = yes).
function probeWithoutProcfs(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
