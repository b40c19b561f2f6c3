import { Worker } from 'node:worker_threads';
import { TetherError } from '../../errors.js';
import { workerExecArgv } from '../../worker-exec-argv.js';
import type { TreeBoundary } from '../containment/containment-types.js';
import { killProcessTree } from '../tree-kill.js';
import type { PtyHostEvent, PtyHostRequest, PtyHostWorkerData, PtyOpenRequest } from './pty-protocol.js';
import { HostedPtySession, type PtySession } from './pty-session.js';

interface Opening {
  readonly treeId: string;
  readonly boundary: TreeBoundary | undefined;
  readonly cleanupGraceMs: number;
  readonly settled: Promise<unknown>;
  resolve(session: PtySession): void;
  reject(err: Error): void;
}

/**
 * One generation of the PTY host worker and the sessions it hosts. It is `running` until it is
 * stopped (dispose) or crashes; either way the host forgets it (`onGone`) and the next open
 * starts a new generation.
 *
 * Crash supervision: a `fatal` report, an `error` event or an unexpected `exit` fails every
 * pending open and write with TERMINAL_CLOSED, kills every session's tree from this thread
 * (identities and tree ids are known here) and ends each session with `host_crashed`.
 *
 * @example
 * ```ts
 * const generation = new PtyHostWorker(workerUrl('pty-host'), tuning, () => {});
 * const session = await generation.open(request, treeId, 2000);
 * await generation.stop();
 * ```
 */
export class PtyHostWorker {
  readonly #worker: Worker;
  readonly #sessions = new Map<number, HostedPtySession>();
  readonly #opening = new Map<number, Opening>();
  readonly #onGone: (generation: PtyHostWorker) => void;
  readonly #ackEveryChars: number;
  #state: 'running' | 'stopping' | 'crashed' | 'ended' = 'running';
  /** The worker's module ran (`ready`): a crash before that is a startup failure. */
  #ready = false;
  #stopping: Promise<void> | null = null;
  #crashHandled: Promise<void> | null = null;
  #terminating = false;
  readonly #threadExited: Promise<void>;

  constructor(url: URL, tuning: PtyHostWorkerData, onGone: (generation: PtyHostWorker) => void) {
    this.#onGone = onGone;
    this.#ackEveryChars = Math.max(1, Math.floor(tuning.maxUnackedChars / 4));
    // Its own filtered options: the host's may fail a worker (`node --input-type=module -e …`).
    this.#worker = new Worker(url, { workerData: tuning, execArgv: workerExecArgv() });
    this.#worker.on('message', (event: PtyHostEvent) => this.#onEvent(event));
    this.#worker.on('error', (err) => this.#crash(`failed: ${err.message}`));
    this.#threadExited = new Promise((resolve) => {
      this.#worker.once('exit', (code) => {
        if (!this.#terminating) this.#crash(`exited with code ${code}`);
        resolve();
      });
    });
    this.#worker.unref();
  }

  /** Resolves when the worker thread has exited (after stop(), or on its own after a crash). */
  get ended(): Promise<void> {
    return this.#threadExited;
  }

  /** True until stop() or a crash. */
  get running(): boolean {
    return this.#state === 'running';
  }

  /** Asks the worker to fork `request`; resolves with the session once it runs. */
  open(
    request: PtyOpenRequest,
    treeId: string,
    cleanupGraceMs: number,
    boundary?: TreeBoundary,
  ): Promise<PtySession> {
    if (this.#state !== 'running') {
      return Promise.reject(new TetherError('TERMINAL_CLOSED', 'the PTY host is gone; open again'));
    }
    let resolve!: (session: PtySession) => void;
    let reject!: (err: Error) => void;
    const promise = new Promise<PtySession>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const settled = promise.then(
      () => {},
      () => {},
    );
    this.#opening.set(request.id, { treeId, boundary, cleanupGraceMs, settled, resolve, reject });
    this.#updateRef();
    this.#worker.postMessage(request);
    return promise;
  }

  /** Test hook: make the worker die. */
  crash(how: 'throw' | 'exit'): void {
    if (this.#state === 'running') this.#worker.postMessage({ type: 'crash', how } satisfies PtyHostRequest);
  }

  /**
   * Kills every session's tree (SIGKILL to its group first), waits until the worker reported
   * each exit — so no leader can die while the worker tears down — then terminates the worker.
   * After a crash: waits for the crash handling and for the worker to end by itself.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      if (this.#state === 'running') {
        this.#state = 'stopping';
        this.#onGone(this);
        await Promise.all([...this.#opening.values()].map((o) => o.settled));
        await Promise.all([...this.#sessions.values()].map((s) => s.shutdown()));
      }
      if (this.#state === 'crashed') {
        // A crashing worker ends by itself once its leaders are dead (see workers/pty-host.ts).
        // Whoever awaits that end keeps the process alive until it came (else a host with
        // nothing else to do exits with the dispose promise unsettled).
        this.#worker.ref();
        await this.#crashHandled;
        await this.#threadExited;
        return;
      }
      if (this.#state === 'stopping') {
        this.#terminating = true;
        await this.#worker.terminate();
      }
      this.#state = 'ended';
      for (const session of [...this.#sessions.values()]) session.abandon();
    })();
    return this.#stopping;
  }

  #onEvent(event: PtyHostEvent): void {
    if (event.type === 'ready') {
      this.#ready = true;
      return;
    }
    if (event.type === 'fatal') {
      this.#crash(`failed: ${event.message}`);
      return;
    }
    if (this.#state === 'crashed' || this.#state === 'ended') return;
    switch (event.type) {
      case 'opened':
        this.#opened(event.id, event.pid, event.startTime, event.ttyPath);
        break;
      case 'open-failed':
        this.#takeOpening(event.id)?.reject(new TetherError(event.code, event.message));
        break;
      case 'data':
        this.#sessions.get(event.id)?.deliver(event.text);
        break;
      case 'written':
        this.#sessions.get(event.id)?.written(event.seq, event.error);
        break;
      case 'synced':
        this.#sessions.get(event.id)?.synced(event.seq);
        break;
      case 'captured':
        this.#sessions.get(event.id)?.captured(event.capture, event.report);
        break;
      case 'exit':
        this.#sessions.get(event.id)?.leaderExited(event.exitCode, event.signal);
        break;
    }
  }

  #opened(id: number, pid: number, startTime: number | null, ttyPath: string): void {
    const opening = this.#takeOpening(id);
    if (opening === undefined) return;
    const { treeId, cleanupGraceMs, boundary } = opening;
    const session = new HostedPtySession(
      { id, identity: { pid, startTime }, treeId, ttyPath, cleanupGraceMs, boundary },
      {
        post: (request) => {
          if (this.#state === 'running' || this.#state === 'stopping') this.#worker.postMessage(request);
        },
        ackEveryChars: this.#ackEveryChars,
        finished: (s) => {
          this.#sessions.delete(s.id);
          this.#updateRef();
        },
      },
    );
    this.#sessions.set(id, session);
    this.#updateRef();
    opening.resolve(session);
  }

  #takeOpening(id: number): Opening | undefined {
    const opening = this.#opening.get(id);
    this.#opening.delete(id);
    this.#updateRef();
    return opening;
  }

  // The worker dies or died (`how`: "failed: …", "exited with code 1"): fail what is pending,
  // kill every tree from here, end the sessions.
  #crash(how: string): void {
    if (this.#state === 'crashed' || this.#state === 'ended') return;
    this.#state = 'crashed';
    this.#onGone(this);
    this.#worker.unref();
    const openings = [...this.#opening.values()];
    this.#opening.clear();
    // A worker that never started fails the same way on every open: retrying cannot help.
    const failure = this.#ready
      ? new TetherError(
          'TERMINAL_CLOSED',
          `the PTY host worker ${how}; the terminal was not opened, open again`,
        )
      : new TetherError(
          'SPAWN_FAILED',
          `the PTY host worker could not start (it ${how}); no terminal can open in this process until ` +
            'that is fixed: opening again fails the same way',
        );
    const sweeps = openings.map((o) => {
      o.reject(failure);
      // It may have been forked already: only its boundary or marker can find it (no pid matches -1).
      const nobody = { pid: -1, startTime: -1 };
      return o.boundary !== undefined
        ? o.boundary.kill(nobody, { graceMs: 0 })
        : killProcessTree({ root: nobody, treeId: o.treeId }, { graceMs: 0 });
    });
    const kills = [...this.#sessions.values()].map((s) => s.hostCrashed());
    this.#crashHandled = Promise.all([...sweeps, ...kills]).then(() => {});
  }

  // A worker with live sessions or pending opens keeps the process alive; an idle one does not.
  #updateRef(): void {
    const busy = this.#sessions.size + this.#opening.size > 0;
    if (busy && (this.#state === 'running' || this.#state === 'stopping')) this.#worker.ref();
    else this.#worker.unref();
  }
}
