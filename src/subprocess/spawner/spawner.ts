import { type ChildProcess, spawn } from 'node:child_process';
import { constants as fsConstants, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import net from 'node:net';
import { constants as osConstants, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { TetherError } from '../../errors.js';
import { builtFile } from '../built-file.js';
import type {
  NamespaceJoin,
  OutputFeed,
  ProcessIdentity,
  StdioDisposition,
  SubprocessExit,
} from '../types.js';
import { orphanState } from './orphan-exit.js';

/** One child to start: what the local provider would have passed to `child_process.spawn`. */
export interface SpawnerRequest {
  readonly argv: readonly [string, ...string[]];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly stdio: {
    readonly stdin: StdioDisposition;
    readonly stdout: StdioDisposition;
    readonly stderr: StdioDisposition;
  };
  /** The tree's cgroup directory: the child enters it between clone and exec, or null. */
  readonly cgroup: string | null;
  /** An enclave to join between clone and exec (after stdio and cgroup), or none. */
  readonly join?: NamespaceJoin | null;
  /** Reads stdout and stderr into one reused buffer and hands each read here (no 'data' events). */
  readonly onOutput?: OutputFeed;
}

/** A started child: its leader (pid and /proc start time), its pipes, and its exit. */
export interface SpawnedChild {
  readonly pid: number;
  readonly startTime: number | null;
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  /** True when stdout and stderr are read into the request's `onOutput`. */
  readonly outputFed: boolean;
  /**
   * Its exit as the spawner reported it; after the spawner's death, as /proc shows it (issue
   * 30.3): with `lost` (status null) when its status or its output could not be learned.
   */
  readonly exited: Promise<SubprocessExit>;
}

/** Why nothing started: the spawner's stage (`chdir`, `exec`, …) and the errno code. */
export class SpawnRefused extends Error {
  constructor(
    readonly stage: string,
    readonly code: string,
  ) {
    super(`${stage} failed: ${code}`);
  }
}

/**
 * The spawner process is gone and this start got no answer: the caller starts it another way.
 * `unanswered`: the request had been sent, so the spawner may have started the child before it
 * died (the caller checks the tree's boundary before starting it again).
 */
export class SpawnerGone extends Error {
  constructor(
    message: string,
    readonly unanswered = false,
  ) {
    super(message);
  }
}

/** The spawner process of one runtime (see tether-spawner.c for why it exists). */
export interface Spawner {
  /**
   * False once the spawner process ended: callers fall back to `child_process`. Its children
   * keep their pipes (ours are opened before it lets go of its own); their exits are then
   * learned from /proc.
   */
  readonly alive: boolean;
  /**
   * Starts a child in its own session. Rejects {@link SpawnRefused} when the child could not
   * start (nothing runs), or {@link SpawnerGone} when the spawner itself is gone (`unanswered`
   * when it died with this start sent: the child may have started).
   */
  spawn(request: SpawnerRequest): Promise<SpawnedChild>;
  /** Ends the spawner (its children are the containment's to kill first). Idempotent. */
  dispose(): Promise<void>;
}

const SIGNAL_NAMES = new Map(Object.entries(osConstants.signals).map(([name, n]) => [n, name]));
const ERRNO_NAMES = new Map(Object.entries(osConstants.errno).map(([name, n]) => [n, name]));
const MODE: Record<StdioDisposition, string> = { ignore: 'i', inherit: 'h', pipe: 'p' };
const LINES_PER_TURN = 8;
// How often the exits of a dead spawner's children are looked up in /proc (orphan-exit.ts).
const ORPHAN_POLL_MS = 20;

// Every fed pipe of every spawner is read into this one buffer: a read's callback runs to its end
// before the loop reads anything else, and the feed copies what it keeps (see OutputFeed).
// 64 KiB is what a pipe read delivers at once.
let feedBuffer: Buffer | null = null;
const sharedFeedBuffer = (): Buffer => {
  feedBuffer ??= Buffer.allocUnsafe(65_536);
  return feedBuffer;
};

/**
 * Where the compiled spawner is (`build/tether-spawner`, made by the install script), or null
 * where there is none (not built, not Linux).
 */
export function spawnerBinary(): string | null {
  return process.platform === 'linux' ? builtFile('tether-spawner') : null;
}

/**
 * Starts the spawner process, or returns null when there is no spawner binary. Its FIFOs go in
 * `fifoAt` (created, mode 0700: a runtime passes one below its state directory, so recovery
 * removes what a crash left, K3), else in a fresh `$TMPDIR/tether-spawn-XXXXXX`. Its children
 * run `nice` levels nicer than this process, in a session autogroup of that nice, and join the
 * CPU group whose `cgroup.procs` is `cpuProcs` when one is given (S1, issue 30.6:
 * `createRuntime({ nice })`, cpu-group.ts).
 *
 * @example
 * ```ts
 * const spawner = startSpawner();
 * const child = await spawner?.spawn({ argv: ['/bin/true'], env: {}, cwd: '/', cgroup: null,
 *   stdio: { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' } });
 * await spawner?.dispose();
 * ```
 */
export function startSpawner(
  binary = spawnerBinary(),
  fifoAt?: string,
  nice = 0,
  cpuProcs?: string,
): Spawner | null {
  if (binary === null) return null;
  if (fifoAt !== undefined) mkdirSync(fifoAt, { recursive: true, mode: 0o700 });
  const fifoDir = fifoAt ?? mkdtempSync(join(tmpdir(), 'tether-spawn-'));
  const proc: ChildProcess = spawn(
    binary,
    [fifoDir, String(nice), ...(cpuProcs === undefined ? [] : [cpuProcs])],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'pipe'],
    },
  );
  const control = proc.stdio[3] as net.Socket;
  const starts = new Map<
    string,
    { resolve(child: SpawnedChild): void; reject(err: Error): void; request: SpawnerRequest }
  >();
  // Children started and not yet reported reaped: how to resolve each exit, and who it is.
  const exits = new Map<number, { resolve(exit: SubprocessExit): void; identity: ProcessIdentity }>();
  let nextId = 0;
  // `dying`: the process or its channel ended (no new start is sent). `gone`: every line it
  // wrote before that has been handled, so what is still pending will never be answered.
  let dying: string | null = null;
  let eof = false;
  let gone: Error | null = null;
  let finished: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    finished = resolve;
  });
  let disposing: Promise<void> | null = null;
  const exitedProc = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  // The spawner keeps the loop alive only while it has work: starts or children to report.
  const refresh = () => {
    // A closed socket's ref() waits for a 'connect' that never comes (a listener per call): once
    // the channel is gone, only the orphan poll's timer holds the loop.
    if (control.destroyed) return;
    if (starts.size + exits.size > 0) control.ref();
    else control.unref();
  };
  proc.unref();
  refresh();

  const die = (why: string, channelGone: boolean) => {
    dying ??= why;
    if (channelGone) eof = true;
    settleIfDrained();
  };
  // Issue 30.3: only after the last line the spawner wrote was handled — an `S` still queued
  // is a child that runs (its pipes are opened), an `X` a true exit — is the rest given up.
  const settleIfDrained = () => {
    if (gone !== null || dying === null || !eof || scheduled) return;
    gone = new SpawnerGone(`the spawner process ended (${dying}); spawns go through child_process`);
    for (const start of starts.values()) start.reject(new SpawnerGone(gone.message, true));
    starts.clear();
    // Children already running keep their pipes (ours are open): only their exits are left to
    // learn, from /proc (orphan-exit.ts), since nobody reports them to us any more.
    if (exits.size > 0) watchOrphans();
    rmSync(fifoDir, { recursive: true, force: true });
    refresh();
    finished();
  };
  // How the spawner process ended (a signal, `exit N`), once its exit was seen.
  let endedBy: string | null = null;
  const died = () => `the spawner process died${endedBy === null ? '' : ` (${endedBy})`}`;
  // Children whose pipes we opened only after both the spawner and the child had let go of them.
  const pipesLost = new Set<number>();
  // A child's exit as its caller gets it: `lost` (status null) when the spawner's death cost
  // its output or its exit status — never an exit 0 for what was not seen (issue 30.3).
  const report = (pid: number, exit: Pick<SubprocessExit, 'exitCode' | 'signal'> | null): SubprocessExit => {
    const output = pipesLost.delete(pid);
    if (exit !== null && !output) return exit;
    const status =
      exit === null
        ? 'its exit status is unknown'
        : `it ${exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`}`;
    const reason = output
      ? `${died()} before this command's output was read: its output is lost and ${status}`
      : `${died()} while this command ran: ${status} (its output was read)`;
    return { exitCode: null, signal: null, lost: { by: 'spawner', reason } };
  };
  let orphanTimer: NodeJS.Timeout | null = null;
  // One timer for all of them, re-armed while any is left; a poll reads one /proc file per
  // orphan (24 µs here), so the period grows with their number: at most ~5% of the loop.
  const watchOrphans = () => {
    orphanTimer = null;
    for (const [pid, { resolve, identity }] of exits) {
      const now = orphanState(identity);
      if (now.state === 'running') continue;
      exits.delete(pid);
      resolve(report(pid, now.exit));
    }
    if (exits.size > 0 && disposing === null) {
      orphanTimer = setTimeout(watchOrphans, Math.max(ORPHAN_POLL_MS, exits.size / 2));
    }
    refresh();
  };
  proc.once('error', (err) => die(err.message, true));
  proc.once('exit', (code, signal) => {
    endedBy = signal ?? `exit ${code}`;
    die(endedBy, false);
    // Its channel ends with it (only it holds the other end); should that not come, a dead
    // process writes nothing more: what it wrote was read by now.
    setTimeout(() => die('its control channel did not close', true), 1000).unref();
  });
  control.on('error', () => {});
  control.on('close', () => die('its control channel closed', true));

  // Whether the spawner still holds its ends of a child's FIFOs: alive, not a zombie. Asked
  // after we opened ours, it says the pipes were never without a holder (issue 30.3).
  const spawnerHolds = () =>
    dying === null &&
    proc.pid !== undefined &&
    orphanState({ pid: proc.pid, startTime: null }).state === 'running';

  const fifo = (id: string, fd: number) => join(fifoDir, `${id}.${fd}`);
  const started = (id: string, pid: number, startTime: number) => {
    const start = starts.get(id);
    if (start === undefined) return;
    starts.delete(id);
    const { stdio } = start.request;
    const identity: ProcessIdentity = { pid, startTime: startTime >= 0 ? startTime : null };
    const exited = new Promise<SubprocessExit>((resolve) => exits.set(pid, { resolve, identity }));
    const opened: net.Socket[] = [];
    const open = (fd: number, disposition: StdioDisposition) => {
      if (disposition !== 'pipe') return null;
      const flags = (fd === 0 ? fsConstants.O_WRONLY : fsConstants.O_RDONLY) | fsConstants.O_NONBLOCK;
      const feed = fd === 0 ? undefined : start.request.onOutput;
      // `onread` is a constructor option since Node 12 (@types/node 20 lists it only for connect).
      let openedFd: number;
      try {
        openedFd = openSync(fifo(id, fd), flags);
      } catch (err) {
        // ENXIO: no reader of the stdin FIFO — the spawner is dead and the child gone.
        if (fd !== 0 || (err as NodeJS.ErrnoException).code !== 'ENXIO' || spawnerHolds()) throw err;
        pipesLost.add(pid);
        return null;
      }
      const options: net.SocketConstructorOpts & net.ConnectOpts = {
        fd: openedFd,
        readable: fd !== 0,
        writable: fd === 0,
      };
      if (feed) {
        options.onread = {
          buffer: sharedFeedBuffer(),
          callback: (n, buf) => {
            feed(buf.subarray(0, n), fd === 1 ? 1 : 2);
            return true;
          },
        };
      }
      const socket = new net.Socket(options);
      opened.push(socket);
      return socket;
    };
    try {
      const child: SpawnedChild = {
        pid,
        startTime: startTime >= 0 ? startTime : null,
        stdin: open(0, stdio.stdin),
        stdout: open(1, stdio.stdout),
        stderr: open(2, stdio.stderr),
        outputFed: start.request.onOutput !== undefined,
        exited,
      };
      // Opened after the spawner died: if the child is gone too, nobody held the pipes in
      // between and what it wrote is lost with them; its exit comes from /proc (issue 30.3).
      if (opened.length > 0 && !spawnerHolds() && orphanState(identity).state !== 'running') {
        pipesLost.add(pid);
      }
      start.resolve(child);
    } catch (err) {
      // Our end of a pipe could not be opened (EMFILE): the child, only just started in its
      // own session, must not run without an owner.
      for (const socket of opened) socket.destroy();
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {}
      start.reject(new SpawnRefused('stdio', (err as NodeJS.ErrnoException).code ?? 'EIO'));
    } finally {
      if (dying === null) send(['O', id]); // our ends are open (or never will be): it lets go of its own
      refresh();
    }
  };

  // The spawner's reply lines, handled a few per turn of the loop: a burst of hundreds of starts
  // answered in one read must not resolve them all (and run all their continuations) at once (P5).
  const lines: string[] = [];
  let partial = '';
  let scheduled = false;
  const handle = (line: string) => {
    const [kind, ...f] = line.split(' ');
    if (kind === 'S') started(f[0]!, Number(f[1]), Number(f[2]));
    else if (kind === 'X') {
      const pid = Number(f[0]);
      const waiting = exits.get(pid);
      if (waiting === undefined) return;
      exits.delete(pid);
      const code = Number(f[1]);
      waiting.resolve(
        report(
          pid,
          code >= 0
            ? { exitCode: code, signal: null }
            : { exitCode: null, signal: (SIGNAL_NAMES.get(Number(f[2])) ?? null) as NodeJS.Signals | null },
        ),
      );
      refresh();
    } else if (kind === 'F') {
      const start = starts.get(f[0]!);
      if (start === undefined) return;
      starts.delete(f[0]!);
      start.reject(new SpawnRefused(f[2] ?? 'spawn', ERRNO_NAMES.get(Number(f[1])) ?? `errno ${f[1]}`));
      refresh();
    }
  };
  let next = 0;
  const drain = () => {
    scheduled = false;
    const stop = Math.min(lines.length, next + LINES_PER_TURN);
    while (next < stop) handle(lines[next++]!);
    if (next < lines.length) {
      scheduled = true;
      setImmediate(drain);
    } else {
      lines.length = 0;
      next = 0;
      settleIfDrained();
    }
  };
  control.setEncoding('utf8');
  control.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const line of parts) lines.push(line);
    if (!scheduled) drain();
  });

  const send = (fields: readonly string[]) => {
    const payload = Buffer.from(`${fields.join('\0')}\0`, 'utf8');
    const frame = Buffer.allocUnsafe(4 + payload.length);
    frame.writeUInt32LE(payload.length, 0);
    payload.copy(frame, 4);
    control.write(frame);
  };

  return {
    get alive() {
      return dying === null;
    },
    spawn(request) {
      if (dying !== null)
        return Promise.reject(gone ?? new SpawnerGone(`the spawner process ended (${dying})`));
      const env = Object.entries(request.env).map(([k, v]) => `${k}=${v}`);
      const join = joinField(request.join ?? null);
      const fields = [request.cwd, request.cgroup ?? '', join, ...request.argv, ...env];
      if (fields.some((f) => f.includes('\0'))) {
        return Promise.reject(
          new TetherError('INVALID_ARGUMENT', 'argv, env and cwd must not contain NUL characters'),
        );
      }
      const id = String(++nextId);
      const { stdin, stdout, stderr } = request.stdio;
      return new Promise<SpawnedChild>((resolve, reject) => {
        starts.set(id, { resolve, reject, request });
        refresh();
        send([
          'S',
          id,
          MODE[stdin] + MODE[stdout] + MODE[stderr],
          request.cwd,
          request.cgroup ?? '',
          join,
          String(request.argv.length),
          ...request.argv,
          String(env.length),
          ...env,
        ]);
      });
    },
    dispose() {
      disposing ??= (async () => {
        dying ??= 'disposed';
        control.end();
        const bound = setTimeout(() => proc.kill('SIGKILL'), 2000);
        await exitedProc;
        clearTimeout(bound);
        // The channel's end follows the exit; a spawner that never started has none to wait for.
        if (proc.pid === undefined) die('disposed', true);
        await ended;
        if (orphanTimer !== null) clearTimeout(orphanTimer);
        orphanTimer = null;
        for (const [pid, { resolve }] of exits) resolve(report(pid, null));
        exits.clear();
        refresh();
      })();
      return disposing;
    },
  };
}

const NAMESPACE_LETTER = { mnt: 'm', pid: 'p', ipc: 'i', net: 'n' } as const;

/** The spawner's number for each seccomp filter of a {@link NamespaceJoin} (`syscalls`). */
export const SECCOMP_FILTER = { none: 0, always: 1, 'no-unix': 2 } as const;

/**
 * A join as the spawner reads it, `pid:starttime:letters:drop:uid:gid:filter` (see
 * tether-spawner.c), or '' for no join: the field of a start request, and the JOIN argument of
 * `tether-spawner --enter` (terminals, and spawns when the spawner process is gone).
 *
 * @example
 * ```ts
 * joinField({ holder: { pid: 42, startTime: 9 }, namespaces: ['mnt'], dropCapabilities: true,
 *   identity: { uid: 65533, gid: 65533 }, syscalls: 'always' }); // '42:9:m:1:65533:65533:1'
 * ```
 */
export function joinField(join: NamespaceJoin | null): string {
  if (join === null) return '';
  const letters = join.namespaces.map((ns) => NAMESPACE_LETTER[ns]).join('');
  const { uid, gid } = join.identity ?? { uid: -1, gid: -1 };
  const drop = join.dropCapabilities ? 1 : 0;
  return `${join.holder.pid}:${join.holder.startTime ?? -1}:${letters}:${drop}:${uid}:${gid}:${SECCOMP_FILTER[join.syscalls]}`;
}
