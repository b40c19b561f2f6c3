import { writeSync } from 'node:fs';

/** Longest wait between two attempts while the tty refuses input (it is full). */
const MAX_RETRY_MS = 20;

interface Pending {
  readonly bytes: Buffer;
  offset: number;
  readonly done: (error: string | null) => void;
}

/**
 * Ordered, non-blocking writes to a PTY master fd.
 *
 * Not through the master's libuv stream: libuv cannot reopen a PTY master, so it marks the
 * handle UV_HANDLE_BLOCKING_WRITES and a write the child does not read spins this thread
 * forever (node-pty's CustomWriteStream exists for the same reason). Here each attempt is one
 * `write(2)` on the non-blocking fd; on EAGAIN the queue retries after 1, 2, 4, … up to 20 ms.
 *
 * @example
 * ```ts
 * const writer = new PtyWriter(masterFd);
 * writer.write(Buffer.from('ls\r'), (error) => console.log(error ?? 'written'));
 * writer.close('the terminal has exited'); // fails what is still queued
 * ```
 */
export class PtyWriter {
  readonly #fd: number;
  readonly #queue: Pending[] = [];
  #timer: NodeJS.Timeout | undefined;
  #delayMs = 0;
  #closed: string | null = null;

  constructor(fd: number) {
    this.#fd = fd;
  }

  /** Queues `bytes`; `done` runs once all of them were written, or with the reason they were not. */
  write(bytes: Buffer, done: (error: string | null) => void): void {
    if (this.#closed !== null) {
      done(this.#closed);
      return;
    }
    this.#queue.push({ bytes, offset: 0, done });
    if (this.#queue.length === 1 && this.#timer === undefined) this.#pump();
  }

  /** Fails every queued write with `reason`; later writes fail at once. Idempotent. */
  close(reason: string): void {
    if (this.#closed !== null) return;
    this.#closed = reason;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const pending of this.#queue.splice(0)) pending.done(reason);
  }

  // Writes as much as the tty takes now; schedules the next attempt when it is full.
  #pump(): void {
    this.#timer = undefined;
    while (this.#queue.length > 0 && this.#closed === null) {
      const head = this.#queue[0]!;
      try {
        head.offset += writeSync(this.#fd, head.bytes, head.offset);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') {
          this.#delayMs = Math.min(MAX_RETRY_MS, Math.max(1, this.#delayMs * 2));
          this.#timer = setTimeout(() => this.#pump(), this.#delayMs);
          return;
        }
        this.close(`writing to the terminal failed: ${(err as Error).message}`);
        return;
      }
      this.#delayMs = 0;
      if (head.offset >= head.bytes.length) {
        this.#queue.shift();
        head.done(null);
      }
    }
  }
}
