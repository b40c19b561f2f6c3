import { MarkedCapture } from '../subprocess/pty/marked-capture.js';
import type { CaptureReport, MarkedOutputWatch, TerminalHandle } from '../subprocess/types.js';
import { executionMarks, executionOf, type ParsedExecution } from './shell-protocol.js';

/**
 * One `execute` call's watch for its markers (T7). Where the terminal's provider can (the PTY
 * host worker), the markers are searched and the output capped off the main thread, which
 * only receives the capped body and the status; otherwise the batches are scanned here, in
 * O(batch) each. The command's output is kept up to `capChars`, its oldest part dropped (with
 * a note) beyond that. Start it before writing the command line.
 *
 * @example
 * ```ts
 * const capture = new ExecutionCapture('n1', 1_000_000, pty);
 * await pty.write(executeLine('n1', 'echo hi'));
 * await capture.finished(); // capture.result: { output: 'hi\n', exitCode: 0 }
 * ```
 */
export class ExecutionCapture {
  readonly nonce: string;
  readonly #watch: MarkedOutputWatch;
  readonly #report: Promise<CaptureReport>;
  #settled: CaptureReport | null = null;
  #waiters: Array<() => void> = [];

  constructor(nonce: string, capChars: number, pty: TerminalHandle) {
    this.nonce = nonce;
    const marks = executionMarks(nonce);
    this.#watch = pty.watchMarked?.(marks, capChars) ?? scanHere(pty, new MarkedCapture(marks, capChars));
    this.#report = this.#watch.report.then((report) => {
      this.#settled = report;
      for (const wake of this.#waiters.splice(0)) wake();
      return report;
    });
  }

  /** The parsed execution once its end marker and the next prompt arrived, else `null`. */
  get result(): ParsedExecution | null {
    if (this.#settled === null || !this.#settled.complete) return null;
    const { output, exitCode } = executionOf(this.#settled);
    const omitted = this.#settled.omitted;
    return omitted === 0
      ? { output, exitCode }
      : { output: `[tether: ${omitted} earlier characters omitted]\n${output}`, exitCode };
  }

  /** Resolves when the watch is over: complete (`result` is set), ended with the terminal, or abandoned. */
  finished(): Promise<void> {
    if (this.#settled !== null) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Ends the watch: what the command printed so far (its end marker never came). */
  async partial(): Promise<string> {
    this.#watch.release();
    return (await this.#report).body;
  }

  /** Releases anyone waiting and ends the watch (the call is over for another reason). */
  abandon(): void {
    this.#watch.release();
    for (const wake of this.#waiters.splice(0)) wake();
  }
}

// The fallback for a terminal whose provider does not watch markers itself: scan each batch here.
function scanHere(pty: TerminalHandle, scanner: MarkedCapture): MarkedOutputWatch {
  let settle!: () => void;
  let unsubscribe = (): void => {};
  const report = new Promise<CaptureReport>((resolve) => {
    settle = () => {
      unsubscribe();
      resolve(scanner.report());
    };
  });
  unsubscribe = pty.onData((text) => {
    if (scanner.push(text)) settle();
  });
  void pty.exited.then(() => settle());
  return { report, release: () => settle() };
}
