/**
 * Removes `execute`'s OSC 697 markers from a terminal's raw stream before it is retained for
 * `read`, so a transcript shows what the programs printed. A marker split across two batches
 * is held back until it is complete.
 *
 * @example
 * ```ts
 * const filter = new MarkerFilter();
 * filter.push('a\x1b]697;E;n'); // 'a'
 * filter.push('1;0\x07b');       // 'b'
 * ```
 */
export class MarkerFilter {
  #pending = '';

  push(text: string): string {
    let input = this.#pending + text;
    this.#pending = '';
    input = input.replace(/\x1b\]697;[^\x07]*\x07/g, '');
    // Hold back an unfinished marker (or a prefix of one) at the end of the batch.
    const open = input.lastIndexOf('\x1b');
    if (open >= 0 && !input.includes('\x07', open) && '\x1b]697;'.startsWith(input.slice(open, open + 6))) {
      this.#pending = input.slice(open);
      return input.slice(0, open);
    }
    return input;
  }

  /** Whatever is held back (the stream ended inside a marker: it was not one of ours). */
  flush(): string {
    const rest = this.#pending;
    this.#pending = '';
    return rest;
  }
}
