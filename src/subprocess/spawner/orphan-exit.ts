import { constants as osConstants } from 'node:os';
import { readProcText } from '../proc.js';
import type { ProcessIdentity, SubprocessExit } from '../types.js';

/** What /proc says of a child whose parent (the spawner) died before it reported its exit. */
export type OrphanState =
  | { readonly state: 'running' }
  /** It exited; `exit` is its wait status when /proc still showed it (a zombie we may read). */
  | { readonly state: 'exited'; readonly exit: Pick<SubprocessExit, 'exitCode' | 'signal'> | null };

const SIGNAL_NAMES = new Map(Object.entries(osConstants.signals).map(([name, n]) => [n, name]));
const CAP_SYS_PTRACE = 19n;

/**
 * Where a spawner's orphan is now, by pid and start time (issue 30.3). Once the spawner is
 * dead its children are re-parented to the nearest subreaper (usually init), which reaps them:
 * nobody reports their exit to us any more. How we still learn it, measured on this machine
 * (Linux 6.1, Node 20; see test/subprocess/spawner-death.test.ts):
 * - polling /proc/<pid>/stat (this): one call is 24 µs here, so a poll of every orphan each
 *   20 ms (spawner.ts) costs little, and an exit is learned within one period. While the
 *   orphan is still a zombie, field 52 (`exit_code`, Linux 3.5+) is its wait status: the true
 *   exit code, when we catch it before its new parent reaps it. This machine's pid 1 reaps
 *   orphans ~1.8 s after they exit, so every exit was caught (0 lost of 56 in the flood test);
 *   an init that reaps at once (tini, systemd) leaves it unknown: `lost`, never a guess.
 * - a pidfd per child: Node 20 has no pidfd_open (nor a way to poll one) without a native
 *   addon, and a pidfd still would not give the status of a child that is not ours to wait.
 * - PR_SET_CHILD_SUBREAPER on the Node process: the orphans would re-parent to Node, but
 *   libuv only waits for the pids it spawned itself, so every orphan — and every grandchild
 *   that any tree ever double-forked — would stay a zombie of the runtime until it exits.
 *
 * @example
 * ```ts
 * const now = orphanState({ pid: 4242, startTime: 123456 });
 * if (now.state === 'exited') console.log(now.exit ?? 'exit status unknown');
 * ```
 */
export function orphanState(identity: ProcessIdentity): OrphanState {
  const line = readProcText(`/proc/${identity.pid}/stat`);
  if (line === null) return { state: 'exited', exit: null };
  const rest = line.slice(line.lastIndexOf(')') + 2).split(' ');
  const startTime = Number(rest[19]);
  if (identity.startTime !== null && startTime !== identity.startTime) return { state: 'exited', exit: null };
  if (rest[0] !== 'Z' && rest[0] !== 'X') return { state: 'running' };
  // The kernel prints 0 here when we may not read it (no ptrace access): believe it only then.
  const status = Number(rest[49]);
  if (rest[0] !== 'Z' || !Number.isInteger(status) || !mayReadExitCode(identity.pid)) {
    return { state: 'exited', exit: null };
  }
  const signal = status & 0x7f;
  if (signal === 0) return { state: 'exited', exit: { exitCode: (status >> 8) & 0xff, signal: null } };
  return {
    state: 'exited',
    exit: { exitCode: null, signal: (SIGNAL_NAMES.get(signal) ?? null) as NodeJS.Signals | null },
  };
}

// Field 52 is shown to a reader with ptrace read access (fs/proc/array.c): the same real,
// effective and saved uid and gid as ours (a zombie has no mm, so dumpability does not count),
// or CAP_SYS_PTRACE. An LSM could still refuse; none that we know does for a read.
function mayReadExitCode(pid: number): boolean {
  if (hasPtraceCapability()) return true;
  const status = readProcText(`/proc/${pid}/status`);
  if (status === null) return false;
  const uid = /^\s+(\d+)\s+(\d+)\s+(\d+)/.exec(status.split('\nUid:')[1] ?? '');
  const gid = /^\s+(\d+)\s+(\d+)\s+(\d+)/.exec(status.split('\nGid:')[1] ?? '');
  const own = (m: RegExpExecArray | null, id: number) =>
    m?.slice(1, 4).every((v) => Number(v) === id) === true;
  return own(uid, process.geteuid?.() ?? -1) && own(gid, process.getegid?.() ?? -1);
}

let ptraceCapability: boolean | undefined;
function hasPtraceCapability(): boolean {
  if (ptraceCapability === undefined) {
    const hex = /^CapEff:\s+([0-9a-f]+)/m.exec(readProcText('/proc/self/status') ?? '')?.[1];
    ptraceCapability = hex !== undefined && ((BigInt(`0x${hex}`) >> CAP_SYS_PTRACE) & 1n) === 1n;
  }
  return ptraceCapability;
}
