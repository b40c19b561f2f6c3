import { createWriteStream, type WriteStream } from 'node:fs';
import { TetherError } from '../errors.js';
import type { FactStream } from './fact-stream.js';
import { FACT_VERSION, type Fact } from './fact-types.js';

/** Bytes the log may have waiting for the disk; past it new facts are dropped (and counted). */
export const LOG_PENDING_BYTES = 4 * 1024 * 1024;

/** `createRuntime({ log })`: a path, or a path with the opt-in inspection events. */
export type LogOption =
  | string
  | {
      readonly path: string;
      /** Add the inspection events (`type: 'inspect'`); default false. */
      readonly inspection?: boolean;
      /** Also sample job output tails and terminal screens twice a second (V3 replays show them). */
      readonly samples?: boolean;
      /** Bytes waiting for the disk before facts are dropped; default {@link LOG_PENDING_BYTES}. */
      readonly maxPendingBytes?: number;
    };

/** An open JSONL log of the fact stream. */
export interface FactLog {
  readonly path: string;
  /** Facts dropped so far because the disk was slower than the runtime (see the drop policy). */
  readonly dropped: number;
  /** Stops listening, writes what is pending and closes the file. */
  close(): Promise<void>;
}

/**
 * V1: writes the fact stream as JSON lines. A slow disk never blocks the main loop and never
 * grows memory without bound: the write stream holds at most {@link LOG_PENDING_BYTES}; facts
 * arriving beyond that are dropped, and once the stream drained a `log.dropped` fact says how
 * many and which `seq` range (docs/FACTS.md, drop policy).
 *
 * @example
 * ```ts
 * const log = await openFactLog(stream, { path: 'run.jsonl', inspection: true });
 * await log.close();
 * ```
 */
export async function openFactLog(stream: FactStream, option: LogOption): Promise<FactLog> {
  const given: Exclude<LogOption, string> = typeof option === 'string' ? { path: option } : option;
  const { path, inspection, samples, maxPendingBytes = LOG_PENDING_BYTES } = given;
  if (typeof path !== 'string' || path.length === 0)
    throw new TetherError(
      'INVALID_ARGUMENT',
      "log must be a file path, or { path, inspection } (e.g. log: 'run.jsonl')",
    );
  const out = await openStream(path);
  let dropped = 0;
  let firstSeq = 0;
  let lastSeq = 0;
  const write = (fact: Fact): void => {
    if (out.writableLength > maxPendingBytes) {
      if (dropped === 0) firstSeq = fact.seq;
      dropped++;
      lastSeq = fact.seq;
      return;
    }
    out.write(`${JSON.stringify(fact)}\n`);
  };
  out.on('drain', () => {
    if (dropped === 0) return;
    const count = dropped;
    dropped = 0;
    total += count;
    stream.emit({ type: 'log.dropped', dropped: count, firstSeq, lastSeq });
  });
  let total = 0;
  const stop = stream.observe(write, {
    replay: true,
    inspection: inspection === true,
    samples: samples === true,
  });
  let closing: Promise<void> | undefined;
  return {
    path,
    get dropped() {
      return total + dropped;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        stop();
        if (dropped > 0) {
          const note = { v: FACT_VERSION, seq: lastSeq, ts: Date.now(), runtime: stream.runtimeId };
          out.write(`${JSON.stringify({ ...note, type: 'log.dropped', dropped, firstSeq, lastSeq })}\n`);
        }
        out.end(() => resolve());
      });
      return closing;
    },
  };
}

function openStream(path: string): Promise<WriteStream> {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(path, { flags: 'w' });
    out.once('ready', () => resolve(out));
    out.once('error', (error) =>
      reject(
        new TetherError(
          'INVALID_ARGUMENT',
          `log: cannot write '${path}' (${error.message}); pass a writable file path`,
        ),
      ),
    );
  });
}
