import { TetherError } from '../../errors.js';
import type { TreeBoundary } from '../containment/containment-types.js';
import { isSameLiveProcess } from '../identity.js';
import { probeInputWait } from '../input-probe/input-wait.js';
import { killProcessTree } from '../tree-kill.js';
import type {
  InputProbe,
  MarkedOutputWatch,
  ProcessIdentity,
  TerminalHandle,
  TerminalHandleExit,
  TreeKillVerdict,
} from '../types.js';
import { signalForeground } from './foreground-signal.js';
import { type CaptureMarks, type CaptureReport, EMPTY_CAPTURE } from './marked-capture.js';
import type { PtyHostRequest } from './pty-protocol.js';
import { type PtySignalTarget, signalGroupOf, signalSessionShared, signalTerminal } from './pty-signal.js';

/** How a PTY session ended (the seam's {@link TerminalHandleExit}). */
export type PtyExit = TerminalHandleExit;

/** One process on a pseudo-terminal hosted by the PTY host worker: the seam's {@link TerminalHandle}. */
export type PtySession = TerminalHandle & { settled(): Promise<void> };

/** What a session needs from the worker generation that hosts it. */
export interface PtySessionHost {
  post(request: PtyHostRequest): void;
  /** Output characters delivered between two flow-control acks. */
  readonly ackEveryChars: number;
  finished(session: HostedPtySession): void;
}

/** Everything the host learned when the worker answered `opened`. */
export interface HostedPtySessionInit {
  readonly id: number;
  readonly identity: ProcessIdentity;
  readonly treeId: string;
  readonly ttyPath: string;
  readonly cleanupGraceMs: number;
  /** The tree's boundary (K1): its kill replaces the marker sweep. */
  readonly boundary?: TreeBoundary | undefined;
}

/**
 * The main-thread side of one PTY: the public {@link PtySession}, plus the calls its host makes
 * when the worker reports (`deliver`, `written`, `leaderExited`) or dies (`hostCrashed`).
 */
export class HostedPtySession implements PtySession {
  readonly id: number;
  readonly identity: ProcessIdentity;
  readonly treeId: string;
  readonly ttyPath: string;
  readonly exited: Promise<PtyExit>;
  lastOutputAt = performance.now();
  readonly #host: PtySessionHost;
  readonly #graceMs: number;
  readonly #boundary: TreeBoundary | undefined;
  readonly #listeners = new Set<(text: string) => void>();
  readonly #parked: string[] = [];
  readonly #writes = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  readonly #syncs = new Map<number, () => void>();
  #resolveExited!: (exit: PtyExit) => void;
  #exit: PtyExit | null = null;
  /** Set when the worker's reports no longer count (host crashed or the tree is being killed for it). */
  #detached = false;
  #seq = 0;
  #captureSeq = 0;
  readonly #captures = new Map<number, (report: CaptureReport) => void>();
  #unacked = 0;
  #killing: Promise<TreeKillVerdict> | null = null;

  constructor(init: HostedPtySessionInit, host: PtySessionHost) {
    this.id = init.id;
    this.identity = init.identity;
    this.treeId = init.treeId;
    this.ttyPath = init.ttyPath;
    this.#graceMs = init.cleanupGraceMs;
    this.#boundary = init.boundary;
    this.#host = host;
    this.exited = new Promise((resolve) => {
      this.#resolveExited = resolve;
    });
  }

  write(data: string): Promise<void> {
    if (typeof data !== 'string') {
      return Promise.reject(new TetherError('INVALID_ARGUMENT', 'write(data): data must be a string'));
    }
    if (this.#exit !== null || this.#detached) return Promise.reject(closedError(this.#exit));
    const seq = ++this.#seq;
    return new Promise((resolve, reject) => {
      this.#writes.set(seq, { resolve, reject });
      this.#host.post({ type: 'write', id: this.id, seq, data });
    });
  }

  settled(): Promise<void> {
    if (this.#exit !== null || this.#detached) return Promise.resolve();
    const seq = ++this.#seq;
    return new Promise((resolve) => {
      this.#syncs.set(seq, resolve);
      this.#host.post({ type: 'sync', id: this.id, seq });
    });
  }

  resize(cols: number, rows: number): void {
    assertWindowSize(cols, rows);
    if (this.#exit === null && !this.#detached) this.#host.post({ type: 'resize', id: this.id, cols, rows });
  }

  onData(listener: (text: string) => void): () => void {
    this.#listeners.add(listener);
    if (this.#parked.length > 0) {
      const parked = this.#parked.splice(0);
      for (const text of parked) this.#hand(text);
    }
    return () => this.#listeners.delete(listener);
  }

  // T7: the worker scans every batch for the markers and caps the body; this thread gets one answer.
  watchMarked(marks: CaptureMarks, capChars: number): MarkedOutputWatch {
    if (this.#exit !== null || this.#detached)
      return { report: Promise.resolve(EMPTY_CAPTURE), release() {} };
    const capture = ++this.#captureSeq;
    const report = new Promise<CaptureReport>((resolve) => this.#captures.set(capture, resolve));
    this.#host.post({ type: 'capture', id: this.id, capture, marks, capChars });
    return {
      report,
      release: () => {
        if (this.#captures.has(capture)) this.#host.post({ type: 'release', id: this.id, capture });
      },
    };
  }

  /** Host: the worker answered capture `capture`. */
  captured(capture: number, report: CaptureReport): void {
    const resolve = this.#captures.get(capture);
    this.#captures.delete(capture);
    resolve?.(report);
  }

  signal(signal: NodeJS.Signals, target: PtySignalTarget): boolean {
    if (this.#exit !== null) return false;
    return signalTerminal(this.identity, signal, target);
  }

  signalForeground(signal: NodeJS.Signals): Promise<boolean> {
    return signalForeground(this, signal);
  }

  // Answered from this machine's /proc: the PTY host is local (T6).
  async probeInput(): Promise<InputProbe> {
    return probeInputWait({ root: this.identity, ttyPath: this.ttyPath });
  }

  kill(): Promise<TreeKillVerdict> {
    this.#killing ??= (async () => {
      // Terminals closed together (dispose, an owner's drain) share the scan for their sessions.
      if (this.#exit === null) await signalSessionShared(this.identity, 'SIGHUP');
      const verdict = await this.#killTree(this.#graceMs);
      if (verdict.status === 'quiescent') await this.exited;
      return verdict;
    })().finally(() => {
      this.#killing = null;
    });
    return this.#killing;
  }

  /** Host: one batch of output from the worker. */
  deliver(text: string): void {
    if (this.#exit !== null || this.#detached) return;
    this.lastOutputAt = performance.now();
    if (this.#listeners.size === 0) this.#parked.push(text);
    else this.#hand(text);
  }

  /** Host: the worker finished (or failed) the write numbered `seq`. */
  written(seq: number, error: string | null): void {
    const pending = this.#writes.get(seq);
    if (pending === undefined) return;
    this.#writes.delete(seq);
    if (error === null) pending.resolve();
    else pending.reject(closedError(this.#exit, error));
  }

  /** Host: the worker drained the master for sync `seq`; its output was delivered before this. */
  synced(seq: number): void {
    const resolve = this.#syncs.get(seq);
    this.#syncs.delete(seq);
    resolve?.();
  }

  /** Host: the leader exited; every batch of its output was delivered before this. */
  leaderExited(exitCode: number | null, signal: NodeJS.Signals | null): void {
    if (!this.#detached) this.#finish({ exitCode, signal, reason: 'exit' });
  }

  /** Host: the worker died. Kill the tree from here, then end with `host_crashed`. */
  async hostCrashed(): Promise<void> {
    if (this.#exit !== null || this.#detached) return;
    this.#detached = true;
    this.#rejectWrites('the PTY host crashed');
    try {
      signalGroupOf(this.identity, 'SIGKILL');
      await this.#killTree(0);
    } finally {
      this.#finish({ exitCode: null, signal: null, reason: 'host_crashed' });
    }
  }

  /**
   * Host, disposing: SIGKILL the leader's group first (the worker cannot end while a leader
   * lives), sweep the tree, then wait for the worker to report the exit.
   */
  async shutdown(): Promise<void> {
    if (this.#exit !== null || this.#detached) return;
    signalGroupOf(this.identity, 'SIGKILL');
    const verdict = await this.#killTree(0);
    if (verdict.status === 'quiescent' || !isSameLiveProcess(this.identity)) await this.exited;
  }

  /** Host: the worker is gone without a report for this session. */
  abandon(): void {
    this.#finish({ exitCode: null, signal: null, reason: 'host_crashed' });
  }

  #killTree(graceMs: number): Promise<TreeKillVerdict> {
    if (this.#boundary !== undefined) return this.#boundary.kill(this.identity, { graceMs });
    // Marker mode, as marker-containment.ts: a look-alike escapee outside this process's cgroup
    // subtree is someone else's (issue 33.5), not this terminal's.
    return killProcessTree({ root: this.identity, treeId: this.treeId, inOwnCgroup: true }, { graceMs });
  }

  // Hands one batch to every listener; acks in steps so the worker keeps reading.
  #hand(text: string): void {
    this.#unacked += text.length;
    if (this.#unacked >= this.#host.ackEveryChars && this.#exit === null) {
      this.#host.post({ type: 'ack', id: this.id, chars: this.#unacked });
      this.#unacked = 0;
    }
    for (const listener of [...this.#listeners]) listener(text);
  }

  #finish(exit: PtyExit): void {
    if (this.#exit !== null) return;
    this.#exit = exit;
    this.#rejectWrites('the terminal has exited');
    // Nothing more will be written once the terminal ended: a pending sync is settled.
    for (const resolve of this.#syncs.values()) resolve();
    this.#syncs.clear();
    // The worker answers every capture before `exit`; after a crash nothing more will come.
    for (const resolve of this.#captures.values()) resolve(EMPTY_CAPTURE);
    this.#captures.clear();
    this.#resolveExited(exit);
    this.#host.finished(this);
  }

  #rejectWrites(why: string): void {
    for (const { reject } of this.#writes.values()) reject(closedError(this.#exit, why));
    this.#writes.clear();
  }
}

/** Throws INVALID_ARGUMENT unless both are integers in 1..65535. */
export function assertWindowSize(cols: number, rows: number): void {
  for (const [name, value] of [
    ['cols', cols],
    ['rows', rows],
  ] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 0xffff) {
      throw new TetherError('INVALID_ARGUMENT', `${name} must be an integer from 1 to 65535, got ${value}`);
    }
  }
}

function closedError(exit: PtyExit | null, detail = 'the terminal has exited'): TetherError {
  const how = exit?.reason === 'host_crashed' ? 'its PTY host crashed' : detail;
  return new TetherError('TERMINAL_CLOSED', `cannot write to the terminal: ${how}; open a new one`);
}
