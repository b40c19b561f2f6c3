/**
 * One pseudo-terminal inside the PTY host worker: fork, batched output, input, resize, and an
 * exit that is reported only after every byte the leader wrote was read.
 *
 * node-pty's own `UnixTerminal` is not used: it reports exit up to 200 ms late, closes the
 * master on a premature EOF (below), and its `kill()` signals a pid that may have been reused.
 * We call its native `fork` (the same forkpty + termios + waitpid thread) and own the master.
 */
import { closeSync, constants, openSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { ReadStream } from 'node:tty';
import { readIdentity } from '../src/subprocess/identity.js';
import { hasProcfs } from '../src/subprocess/proc.js';
import { signalGroupOf } from '../src/subprocess/pty/pty-signal.js';
import type { ProcessIdentity } from '../src/subprocess/types.js';
import type { BatchBuffers } from './pty-batches.js';
import { type ForkedPty, forkPty, type PtyForkSpec, resizePty, signalName } from './pty-native.js';
import { PtyWriter } from './pty-writer.js';

/** Where a master's batches and its exit go (the worker posts them to the main thread). */
export interface PtyMasterSink {
  data(text: string): void;
  exit(exitCode: number | null, signal: NodeJS.Signals | null): void;
}

export interface PtyMasterTuning {
  readonly flushMs: number;
  readonly batchBytes: number;
  readonly maxUnackedChars: number;
}

/**
 * A forked PTY. Output is read by libuv (a tty stream on the master), copied into a batch buffer
 * (borrowed from `batches` while bytes are pending) and decoded once per batch, posted at
 * `batchBytes` or `flushMs` after the first pending byte.
 *
 * @example
 * ```ts
 * const pty = PtyMaster.fork(spec, tuning, batches, { data: (text) => post(text), exit: (code, sig) => done(code, sig) });
 * pty.write('ls\r', (error) => {});
 * ```
 */
export class PtyMaster {
  readonly identity: ProcessIdentity;
  readonly ttyPath: string;
  readonly #fd: number;
  readonly #slave: number;
  readonly #socket: ReadStream;
  readonly #writer: PtyWriter;
  readonly #sink: PtyMasterSink;
  readonly #tuning: PtyMasterTuning;
  readonly #decoder = new StringDecoder('utf8');
  readonly #batches: BatchBuffers;
  #batch: Buffer | null = null;
  #length = 0;
  #timer: NodeJS.Timeout | undefined;
  #unacked = 0;
  #paused = false;
  #exited = false;

  /** Forks `spec.file` on a new PTY; throws what forkpty(3) or opening the slave throws. */
  static fork(
    spec: PtyForkSpec,
    tuning: PtyMasterTuning,
    batches: BatchBuffers,
    sink: PtyMasterSink,
  ): PtyMaster {
    let self: PtyMaster | undefined;
    // Runs on this thread's loop (a thread-safe function), never before fork() returned. It must
    // not throw: node-pty turns a JS exception here into a C++ one, which aborts the process.
    const onExit = (code: number, signal: number): void => {
      try {
        self?.onExit(code, signal);
      } catch (err) {
        setImmediate(() => {
          throw err;
        });
      }
    };
    const term = forkPty(spec, onExit);
    self = new PtyMaster(term, tuning, batches, sink);
    return self;
  }

  private constructor(term: ForkedPty, tuning: PtyMasterTuning, batches: BatchBuffers, sink: PtyMasterSink) {
    this.#fd = term.fd;
    this.ttyPath = term.pty;
    this.identity = leaderIdentity(term.pid);
    this.#tuning = tuning;
    this.#sink = sink;
    // libuv#4992 (the cause of node-pty#72/#85/#726): libuv takes POLLHUP after a partial read
    // as EOF, but a Linux PTY master raises POLLHUP as soon as the last slave fd closes, while
    // the leader's final KBs still sit in the tty buffers. Node then ends the stream, closes the
    // master and the tail is lost. Holding our own slave fd keeps POLLHUP away; after the exit
    // the master is drained to EAGAIN (a read first flushes the tty's pending buffers).
    try {
      this.#slave = openSync(term.pty, constants.O_RDWR | constants.O_NOCTTY | constants.O_NONBLOCK);
    } catch (err) {
      signalGroupOf(this.identity, 'SIGKILL');
      closeSync(term.fd);
      throw err;
    }
    this.#batches = batches;
    this.#writer = new PtyWriter(term.fd);
    this.#socket = new ReadStream(term.fd);
    this.#socket.on('data', (chunk: Buffer) => {
      this.#append(chunk);
      if (!this.#paused) this.#readNow(false);
    });
    // With the slave held there is no EIO; any other error just ends reading, exit still drains.
    this.#socket.on('error', () => {});
  }

  /** Queues `data` (UTF-8) to the master; `done` runs once the kernel took all of it, or with an error. */
  write(data: string, done: (error: string | null) => void): void {
    this.#writer.write(Buffer.from(data, 'utf8'), done);
  }

  /**
   * T5: reads the master to EAGAIN now and posts it (a read first flushes the tty's pending
   * buffers, so every byte the terminal's processes wrote before this call is posted by it).
   */
  drain(): void {
    if (this.#exited) return;
    this.#readNow(true);
    this.#flush();
  }

  resize(cols: number, rows: number): void {
    if (!this.#exited) resizePty(this.#fd, cols, rows);
  }

  /** The main thread delivered `chars` characters: reading resumes below half the budget. */
  ack(chars: number): void {
    this.#unacked = Math.max(0, this.#unacked - chars);
    if (this.#paused && this.#unacked <= this.#tuning.maxUnackedChars / 2) {
      this.#paused = false;
      this.#socket.resume();
    }
  }

  /** SIGKILL the leader's process group unless its exit was observed (identity-checked, S4). */
  killGroup(): void {
    if (!this.#exited) signalGroupOf(this.identity, 'SIGKILL');
  }

  /** The leader was reaped: deliver what is buffered, drain the master, then report exit. */
  private onExit(code: number, signo: number): void {
    if (this.#exited) return;
    try {
      // Bytes a paused stream already holds come first ('data' fires for each read()).
      while (this.#socket.readableLength > 0 && this.#socket.read() !== null) {}
      this.#exited = true;
      this.#readNow(true);
      this.#flush();
      const tail = this.#decoder.end();
      if (tail !== '') this.#sink.data(tail);
    } finally {
      this.#exited = true;
      clearTimeout(this.#timer);
      this.#giveBack();
      this.#writer.close('the terminal has exited');
      this.#socket.destroy();
      closeSync(this.#slave);
      this.#sink.exit(signo === 0 ? code : null, signalName(signo));
    }
  }

  // Copies a chunk into the batch, flushing whenever the batch is full.
  #append(chunk: Buffer): void {
    for (let at = 0; at < chunk.length; ) {
      const batch = this.#borrowed();
      const n = chunk.copy(batch, this.#length, at);
      this.#length += n;
      at += n;
      if (this.#length === batch.length) this.#flush();
    }
    this.#armFlush();
  }

  // Posts the pending bytes as one decoded batch; pauses reading while the main thread lags.
  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#batch === null || this.#length === 0) return;
    const text = this.#decoder.write(this.#batch.subarray(0, this.#length));
    this.#length = 0;
    this.#giveBack(); // the decoder keeps a split character's bytes itself
    if (text === '') return;
    this.#unacked += text.length;
    this.#sink.data(text);
    if (!this.#paused && !this.#exited && this.#unacked > this.#tuning.maxUnackedChars) {
      this.#paused = true;
      this.#socket.pause();
    }
  }

  // read(2)s the master until EAGAIN (with our slave fd open it never reports EIO). After a
  // libuv wakeup it stops at a full batch, sparing the stream machinery a trip per 4 KiB tty
  // read; after the exit (`toEnd`) it drains everything.
  #readNow(toEnd: boolean): void {
    for (;;) {
      const batch = this.#borrowed();
      let n: number;
      try {
        n = readSync(this.#fd, batch, this.#length, batch.length - this.#length, null);
      } catch {
        break; // EAGAIN: the tty buffers are empty
      }
      if (n === 0) break;
      this.#length += n;
      if (this.#length === batch.length) {
        this.#flush();
        if (!toEnd) return;
      }
    }
    if (this.#length === 0) this.#giveBack();
    this.#armFlush();
  }

  // The batch buffer, borrowed on the first pending byte.
  #borrowed(): Buffer {
    this.#batch ??= this.#batches.take();
    return this.#batch;
  }

  // Returns the batch buffer once nothing is pending in it.
  #giveBack(): void {
    if (this.#batch === null || this.#length !== 0) return;
    this.#batches.give(this.#batch);
    this.#batch = null;
  }

  // Pending bytes are posted at most flushMs after they were read.
  #armFlush(): void {
    if (this.#length > 0 && this.#timer === undefined && !this.#exited) {
      this.#timer = setTimeout(() => this.#flush(), this.#tuning.flushMs);
    }
  }
}

// Read right after the fork. If the leader was already reaped (a loaded machine can preempt this
// thread between fork and here), start time -1 matches no process, so its pid is never signalled.
function leaderIdentity(pid: number): ProcessIdentity {
  return readIdentity(pid) ?? { pid, startTime: hasProcfs() ? -1 : null };
}
