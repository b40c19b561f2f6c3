/**
 * The messages between the main thread and the PTY host worker (`workers/pty-host.ts`).
 *
 * A plain MessagePort protocol rather than comlink: output is a push stream, not a call, and
 * one FIFO port carries a terminal's data batches and its exit message, so "every byte before
 * exit" holds by construction. A request in flight when the worker dies is visible to the
 * supervisor here (it owns the pending maps), where a comlink call would simply never settle.
 */

import type { CaptureMarks, CaptureReport } from './marked-capture.js';

/** Parameters of one PTY, as the worker needs them (argv split, env flattened). */
export interface PtyOpenRequest {
  readonly type: 'open';
  readonly id: number;
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  /** `NAME=value` entries: the complete environment of the child. */
  readonly env: readonly string[];
  readonly cols: number;
  readonly rows: number;
  /** When `file` is an entry wrapper (K1): the program it execs, checked before the fork. */
  readonly program: string | null;
}

/** Main thread → worker. */
export type PtyHostRequest =
  | PtyOpenRequest
  /** Write `data` (UTF-8) to the master; answered by `written` with the same `seq`. */
  | { readonly type: 'write'; readonly id: number; readonly seq: number; readonly data: string }
  | { readonly type: 'resize'; readonly id: number; readonly cols: number; readonly rows: number }
  /**
   * T7: scan this PTY's output for `marks` from the next batch on, keeping the body within
   * `capChars`; answered by one `captured` (complete, released, or at the PTY's exit).
   */
  | {
      readonly type: 'capture';
      readonly id: number;
      readonly capture: number;
      readonly marks: CaptureMarks;
      readonly capChars: number;
    }
  /** Ends capture `capture` early: its `captured` answer carries what it holds so far. */
  | { readonly type: 'release'; readonly id: number; readonly capture: number }
  /** Flow control: the main thread handed `chars` more characters of output to its listeners. */
  | { readonly type: 'ack'; readonly id: number; readonly chars: number }
  /** T5: read the master to EAGAIN, post what was read, then answer `synced`. */
  | { readonly type: 'sync'; readonly id: number; readonly seq: number }
  /** Test hook: make the worker die (`throw`: an uncaught exception; `exit`: process.exit). */
  | { readonly type: 'crash'; readonly how: 'throw' | 'exit' };

/** Worker → main thread. */
export type PtyHostEvent =
  | {
      readonly type: 'opened';
      readonly id: number;
      readonly pid: number;
      /** Field 22 of /proc/<pid>/stat read right after the fork; `null` without /proc. */
      readonly startTime: number | null;
      /** The slave side, e.g. `/dev/pts/7`. */
      readonly ttyPath: string;
    }
  | {
      readonly type: 'open-failed';
      readonly id: number;
      readonly code: 'SPAWN_FAILED' | 'CWD_NOT_FOUND';
      readonly message: string;
    }
  /** One batch of output, decoded as UTF-8, in order. */
  | { readonly type: 'data'; readonly id: number; readonly text: string }
  | { readonly type: 'written'; readonly id: number; readonly seq: number; readonly error: string | null }
  | { readonly type: 'synced'; readonly id: number; readonly seq: number }
  /** Capture `capture` is over; posted after the data batch that completed it, before `exit`. */
  | {
      readonly type: 'captured';
      readonly id: number;
      readonly capture: number;
      readonly report: CaptureReport;
    }
  /** The leader exited and every byte it wrote was sent before this message. */
  | {
      readonly type: 'exit';
      readonly id: number;
      readonly exitCode: number | null;
      readonly signal: NodeJS.Signals | null;
    }
  /** The worker's module has run: it takes requests (a failure before this is a startup failure). */
  | { readonly type: 'ready' }
  /** The worker hit an unexpected error: it kills every PTY group, then exits by itself. */
  | { readonly type: 'fatal'; readonly message: string };

/** Tuning of the worker, passed as `workerData`. */
export interface PtyHostWorkerData {
  /** Output is posted at most this long after it was read (default 5 ms). */
  readonly flushMs: number;
  /** ... or as soon as this many bytes are pending (default 64 KiB). */
  readonly batchBytes: number;
  /** Reading a PTY pauses while more characters than this await the main thread's ack. */
  readonly maxUnackedChars: number;
}
