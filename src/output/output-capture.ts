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
 * The bytes come either from the streams' 'data' events or, where the provider reads the pipes
 * into one reused buffer, from {@link OutputCapture.feed} (the spawn's `onOutput`): then no read
 * allocates, and a flood leaves the host's heap alone (P2).
 *
 * @example
 * ```ts
 * const capture = new OutputCapture(30_000, spillPool);
 * const child = await provider.spawn({ ...spec, onOutput: capture.feed });
 * capture.attach(child.stdout, child.outputFed); capture.attach(child.stderr, child.outputFed);
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

  /** Takes one read's bytes (a view that may be reused after the call: what is kept is copied). */
  readonly feed = (bytes: Uint8Array): void => this.#onData(bytes, true);

  /**
   * Watches `source` until it closes (and pauses it while the spill is behind); with `fed`
   * false its bytes are read from its 'data' events, else they arrive through {@link feed}.
   */
  attach(source: Readable | null, fed = false): void {
    if (!source) return;
    this.#sources.push(source);
    this.#open++;
    if (!fed) source.on('data', (chunk: Buffer) => this.#onData(chunk, false));
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

  // `reused`: the chunk's memory is the reader's, so what outlives this call is a copy.
  #onData(chunk: Uint8Array, reused: boolean): void {
    this.#tail.push(chunk);
    if (!this.#spillPool) return; // the tail is all there is
    if (!this.#spill) {
      if (this.#tail.totalBytes <= this.#capChars) {
        // Output that fits the cap needs no file; keep the raw bytes until we know.
        this.#early.push(reused ? new Uint8Array(chunk) : chunk);
        return;
      }
      this.#spill = this.#spillPool.open();
      for (const early of this.#early) this.#write(early);
      this.#early = [];
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
