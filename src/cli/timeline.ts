/**
 * The demo's live timeline: one line per event with the elapsed time and who acted, and a
 * spinner line (on a terminal only) while background work runs.
 *
 * @example
 * ```ts
 * const tl = new Timeline(process.stdout);
 * tl.say('alice', 'started job build');
 * tl.progress(() => `${running} job(s) running`); // spins until tl.stopProgress()
 * ```
 */
export class Timeline {
  readonly #out: NodeJS.WriteStream;
  readonly #start = performance.now();
  #spinner: NodeJS.Timeout | null = null;
  #status: (() => string) | null = null;
  #frame = 0;

  constructor(out: NodeJS.WriteStream) {
    this.#out = out;
  }

  say(who: string, what: string): void {
    this.#clearSpinner();
    const seconds = ((performance.now() - this.#start) / 1000).toFixed(2).padStart(6);
    this.#out.write(`${seconds}s  ${who.padEnd(8)} ${what}\n`);
    this.#drawSpinner();
  }

  /** Shows `status()` behind a spinner until `stopProgress()`; a no-op when output is not a terminal. */
  progress(status: () => string): void {
    this.#status = status;
    if (!this.#out.isTTY || this.#spinner) return;
    this.#spinner = setInterval(() => {
      this.#frame++;
      this.#clearSpinner();
      this.#drawSpinner();
    }, 100);
  }

  /** Erases the spinner line (it must go while `#spinner` still says one is drawn) and stops it. */
  stopProgress(): void {
    this.#clearSpinner();
    if (this.#spinner) clearInterval(this.#spinner);
    this.#spinner = null;
    this.#status = null;
  }

  #drawSpinner(): void {
    if (!this.#spinner || !this.#status) return;
    const frames = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';
    this.#out.write(`\x1b[2m${frames[this.#frame % frames.length]} ${this.#status()}\x1b[0m`);
  }

  #clearSpinner(): void {
    if (this.#spinner) this.#out.write('\r\x1b[2K');
  }
}
