import type { Readable } from 'node:stream';
import type { SpillPool, SpillWriter } from './spill.js';
import type { SpillRef } from './spill-retention.js';
import { TailBuffer } from './tail-buffer.js';

export interface CapturedOutput {
  readonly output: string;
  readonly truncated: boolean;
  readonly spillPath?: string;
  readonly spillError?: string;
  /** The published spill as the runtime tracks it (K4), when `adopt` was given. */
  readonly spill?: SpillRef;
}

/**
 * Collects a command's stdout and stderr in arrival order (C2): the tail in memory, the full
 * raw bytes through the spill worker once they no longer fit the cap. A source is paused while
 * the spill worker is behind, so a flood never piles up in memory.
 *
 * @example
 * ```ts
 * const capture = new OutputCapture(30_000, spillPool);
 * capture.attach(child.stdout); capture.attach(child.stderr);
 * await capture.closed;
 * const { output, truncated, spillPath } = await capture.finish();
 * ```
 */
export class OutputCapture {
  readonly #tail: TailBuffer;
  readonly #capChars: number;
  readonly #spillPool: SpillPool | null;
  readonly #adopt: ((path: string) => SpillRef) | undefined;
  readonly #sources: Readable[] = [];
  #early: Uint8Array[] = [];
  #spill: SpillWriter | null = null;
  #open = 0;
  #resolveClosed!: () => void;
  /** Resolves when every attached stream has closed. */
  readonly closed = new Promise<void>((resolve) => {
    this.#resolveClosed = resolve;
  });

  /** `adopt` takes over a published spill (K4: retention); its ref's path is the one reported. */
  constructor(capChars: number, spillPool: SpillPool | null, adopt?: (path: string) => SpillRef) {
    this.#capChars = capChars;
    this.#adopt = adopt;
    this.#tail = new TailBuffer(capChars);
    this.#spillPool = spillPool;
  }

  attach(source: Readable | null): void {
    if (!source) return;
    this.#sources.push(source);
    this.#open++;
    source.on('data', (chunk: Buffer) => this.#onData(chunk));
    source.once('close', () => {
      if (--this.#open === 0) this.#resolveClosed();
    });
    source.on('error', () => {});
  }

  /** Stops reading (a leftover process holds the pipe open): what arrived so far is kept. */
  detach(): void {
    for (const source of this.#sources) source.destroy();
  }

  async finish(): Promise<CapturedOutput> {
    if (this.#open === 0) this.#resolveClosed();
    const spill = this.#spill;
    const outcome = spill ? await spill.finish() : null;
    const ref = outcome && 'path' in outcome && this.#adopt ? this.#adopt(outcome.path) : undefined;
    const spilled = ref ? { path: ref.path } : outcome;
    const marker = (omitted: number) =>
      `[tether: ${omitted} earlier bytes of output omitted; ${
        spilled && 'path' in spilled
          ? `full output: ${spilled.path}`
          : this.#spillPool
            ? 'the full output could not be saved'
            : 'spilling is off'
      }]\n`;
    let { text, omittedBytes } = this.#tail.finish();
    if (omittedBytes > 0) {
      // The marker counts against the cap, so the whole output stays within it.
      ({ text, omittedBytes } = this.#tail.finish(
        Math.max(0, this.#capChars - marker(this.#tail.totalBytes).length),
      ));
      text = marker(omittedBytes) + text;
    }
    return {
      output: text,
      truncated: omittedBytes > 0,
      ...(spilled && 'path' in spilled ? { spillPath: spilled.path } : {}),
      ...(spilled && 'error' in spilled ? { spillError: spilled.error } : {}),
      ...(ref ? { spill: ref } : {}),
    };
  }

  /** Discards the spill (the caller will not publish it). */
  async abort(): Promise<void> {
    await this.#spill?.abort();
  }

  #onData(chunk: Buffer): void {
    this.#tail.push(chunk);
    if (!this.#spill) {
      // Output that fits the cap needs no file; keep the raw bytes until we know.
      this.#early.push(chunk);
      if (this.#tail.totalBytes <= this.#capChars || !this.#spillPool) {
        if (!this.#spillPool) this.#early = [];
        return;
      }
      this.#spill = this.#spillPool.open();
      for (const early of this.#early) this.#write(early);
      this.#early = [];
      return;
    }
    this.#write(chunk);
  }

  #write(chunk: Uint8Array): void {
    const spill = this.#spill!;
    if (spill.write(chunk)) return;
    for (const source of this.#sources) source.pause();
    void spill.drained().then(() => {
      for (const source of this.#sources) if (!source.destroyed) source.resume();
    });
  }
}
