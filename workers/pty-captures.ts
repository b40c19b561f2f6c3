/**
 * The PTY host's execution captures (T7): for each PTY, the `execute` calls waiting for their
 * markers. Each batch a PTY posts is scanned here, in O(batch) (see `MarkedCapture`), and a
 * capture is answered with one `captured` event: when it completes (right after the batch
 * that completed it, so the main thread has every byte before the answer), when the main
 * thread releases it, or when the PTY exits (before its `exit` event).
 */
import { type CaptureMarks, EMPTY_CAPTURE, MarkedCapture } from '../src/subprocess/pty/marked-capture.js';
import type { PtyHostEvent } from '../src/subprocess/pty/pty-protocol.js';

export class PtyCaptures {
  readonly #post: (event: PtyHostEvent) => void;
  /** PTY id → capture id → its scanner. */
  readonly #open = new Map<number, Map<number, MarkedCapture>>();

  constructor(post: (event: PtyHostEvent) => void) {
    this.#post = post;
  }

  watch(id: number, capture: number, marks: CaptureMarks, capChars: number): void {
    const forPty = this.#open.get(id) ?? new Map<number, MarkedCapture>();
    this.#open.set(id, forPty);
    forPty.set(capture, new MarkedCapture(marks, capChars));
  }

  /** The PTY is gone already: the capture is over with nothing in it. */
  answerGone(id: number, capture: number): void {
    this.#post({ type: 'captured', id, capture, report: EMPTY_CAPTURE });
  }

  /** One batch the PTY just posted. */
  scan(id: number, text: string): void {
    const forPty = this.#open.get(id);
    if (forPty === undefined) return;
    for (const [capture, scanner] of forPty) {
      if (scanner.push(text)) this.#answer(id, capture, forPty);
    }
  }

  release(id: number, capture: number): void {
    const forPty = this.#open.get(id);
    if (forPty?.has(capture)) this.#answer(id, capture, forPty);
  }

  /** The PTY exited: every capture it had is answered with what it holds. */
  releaseAll(id: number): void {
    const forPty = this.#open.get(id);
    if (forPty === undefined) return;
    for (const capture of [...forPty.keys()]) this.#answer(id, capture, forPty);
  }

  #answer(id: number, capture: number, forPty: Map<number, MarkedCapture>): void {
    const scanner = forPty.get(capture)!;
    forPty.delete(capture);
    if (forPty.size === 0) this.#open.delete(id);
    this.#post({ type: 'captured', id, capture, report: scanner.report() });
  }
}
