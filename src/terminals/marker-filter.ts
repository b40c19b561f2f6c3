/** Room for an echo beyond twice the line that caused it (readline redraws, a wrapped prompt). */
const ECHO_SLACK_CHARS = 64 * 1024;

/** An `execute` whose echo is being replaced: what the shell shows until its start marker. */
interface PendingEcho {
  readonly startMark: string;
  /** The line the shell echoes (what was written, without its final `\r`). */
  readonly line: string;
  /** The start of `line` up to its nonce: where the echo begins, wherever readline wraps it. */
  readonly lineStart: string;
  /** What a person would have seen instead: the command as typed, continuation prompts, Enter. */
  readonly display: string;
  readonly maxHeld: number;
  held: string;
}

/**
 * Makes a terminal's raw stream read as a person's session before it is retained for `read`
 * and drawn by `screen` (T7 output hygiene): `execute`'s OSC 697 markers are removed, and the
 * shell's echo of the wrapper line `execute` wrote (nonce, `printf`, `eval $'…'`) is replaced
 * by the command as it was written, so the transcript shows `$ echo hi`, then `hi`, then the
 * prompt. A marker split across two batches is held back until it is complete.
 *
 * @example
 * ```ts
 * const filter = new MarkerFilter();
 * filter.push('a\x1b]697;E;n'); // 'a'
 * filter.push('1;0\x07b');       // 'b'
 * filter.expectEcho('n2', ' __tether_n=n2; … eval $\'echo hi\'\r', 'echo hi');
 * filter.push(' __tether_n=n2; … eval $\'echo hi\'\r\n\x1b]697;S;n2\x07hi\r\n'); // 'echo hi\r\nhi\r\n'
 * ```
 */
export class MarkerFilter {
  #pending = '';
  #echo: PendingEcho | null = null;

  push(text: string): string {
    let input = this.#pending + text;
    this.#pending = '';
    const echo = this.#echo;
    if (echo !== null) {
      echo.held += input;
      const at = echo.held.indexOf(echo.startMark);
      if (at < 0) {
        // Everything before the start marker is the shell echoing our line: hold it.
        if (echo.held.length <= echo.maxHeld) return '';
        input = this.endEcho(); // no marker is coming within any plausible echo: give up
      } else {
        this.#echo = null;
        // What came before the echo (the prompt, when the line was typed before it showed) stays.
        const echoed = echo.held.indexOf(echo.lineStart);
        const before = echoed >= 0 && echoed < at ? echo.held.slice(0, echoed) : '';
        input = before + echo.display + echo.held.slice(at);
      }
    }
    input = input.replace(/\x1b\]697;[^\x07]*\x07/g, '');
    // Hold back an unfinished marker (or a prefix of one) at the end of the batch.
    const open = input.lastIndexOf('\x1b');
    if (open >= 0 && !input.includes('\x07', open) && '\x1b]697;'.startsWith(input.slice(open, open + 6))) {
      this.#pending = input.slice(open);
      return input.slice(0, open);
    }
    return input;
  }

  /**
   * From now until the start marker of `nonce`, what the terminal prints is the echo of `line`
   * (the wrapper `execute` is about to write): it is replaced by `command` as a person would
   * have typed it. Call before writing `line`.
   */
  expectEcho(nonce: string, line: string, command: string): void {
    const typed = command.replace(/\n+$/, '');
    this.#echo = {
      startMark: `\x1b]697;S;${nonce}\x07`,
      line: line.replace(/\r$/, ''),
      lineStart: line.slice(0, line.indexOf(nonce) + nonce.length),
      // What bash shows for a multi-line command typed at its prompt: PS2 before each next line.
      display: `${typed.split('\n').join('\r\n> ')}\r\n`,
      maxHeld: 2 * line.length + ECHO_SLACK_CHARS,
      held: '',
    };
  }

  /**
   * Ends an echo replacement whose start marker never came (the command was interrupted or the
   * shell replaced before it ran) and returns what was held: terminal output, with the wrapper
   * line shown as the command where it appears verbatim. `''` when nothing is pending.
   */
  endEcho(): string {
    const echo = this.#echo;
    this.#echo = null;
    if (echo === null || echo.held === '') return '';
    return echo.held.replaceAll(echo.line, echo.display.replace(/\r\n$/, ''));
  }

  /** Whatever is held back (the stream ended inside a marker: it was not one of ours). */
  flush(): string {
    const rest = this.endEcho() + this.#pending;
    this.#pending = '';
    return rest;
  }
}
