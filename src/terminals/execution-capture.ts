import { type ParsedExecution, parseExecution } from './shell-protocol.js';

/**
 * Watches a terminal's raw output for one `execute` call's markers (T7) without keeping the
 * whole stream: text before the start marker is only searched, and the command's output is
 * kept up to `capChars`, dropping its oldest part (with a note) beyond that.
 *
 * @example
 * ```ts
 * const capture = new ExecutionCapture('n1', 1_000_000);
 * const off = session.onData((text) => capture.push(text));
 * // ... capture.result is set once the end marker arrived
 * ```
 */
export class ExecutionCapture {
  readonly nonce: string;
  readonly #capChars: number;
  #text = '';
  #omitted = 0;
  #result: ParsedExecution | null = null;
  #waiters: Array<() => void> = [];

  constructor(nonce: string, capChars: number) {
    this.nonce = nonce;
    this.#capChars = capChars;
  }

  /** The parsed execution once its end marker arrived, else `null`. */
  get result(): ParsedExecution | null {
    if (this.#result === null || this.#omitted === 0) return this.#result;
    return {
      ...this.#result,
      output: `[tether: ${this.#omitted} earlier characters omitted]\n${this.#result.output}`,
    };
  }

  push(text: string): void {
    if (this.#result !== null) return;
    this.#text += text;
    this.#result = parseExecution(this.#text, this.nonce);
    if (this.#result !== null) {
      for (const wake of this.#waiters.splice(0)) wake();
      return;
    }
    // Keep a margin for a marker split across batches; only the body's tail beyond the cap goes.
    const limit = this.#capChars + 256;
    if (this.#text.length > limit) {
      const cut = this.#text.length - limit;
      const start = this.#text.indexOf(`\x1b]697;S;${this.nonce}\x07`);
      if (start < 0 || start >= cut) {
        this.#text = this.#text.slice(cut);
      } else {
        const marker = `\x1b]697;S;${this.nonce}\x07`;
        const bodyStart = start + marker.length;
        this.#omitted += cut;
        this.#text = marker + this.#text.slice(bodyStart + cut);
      }
    }
  }

  /** Resolves when the end marker arrived (or immediately if it already had). */
  finished(): Promise<void> {
    if (this.#result !== null) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** What the command printed so far (its end marker never came): the text after the start marker. */
  partial(): string {
    const marker = `\x1b]697;S;${this.nonce}\x07`;
    const start = this.#text.indexOf(marker);
    return start < 0 ? '' : this.#text.slice(start + marker.length).replace(/\r\n/g, '\n');
  }

  /** Releases anyone waiting (the call is over for another reason). */
  abandon(): void {
    for (const wake of this.#waiters.splice(0)) wake();
  }
}
