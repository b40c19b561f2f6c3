/**
 * Keeps the last bytes of a stream in a fixed ring, so a 100 MB line costs no more memory than
 * a short one, and decodes them once at the end (C2: the tail holds the errors and summaries).
 *
 * Decoding at the end rather than per chunk is what makes split characters a non-issue: the
 * ring holds bytes, and the one decode sees whole sequences. Invalid bytes become U+FFFD.
 *
 * @example
 * ```ts
 * const tail = new TailBuffer(30_000);
 * child.stdout.on('data', (chunk) => tail.push(chunk));
 * const { text, omittedBytes } = tail.finish();
 * ```
 */
export class TailBuffer {
  readonly #capChars: number;
  readonly #max: number;
  #ring: Uint8Array;
  #start = 0;
  #length = 0;
  #total = 0;

  constructor(capChars: number) {
    this.#capChars = capChars;
    // A UTF-16 code unit never takes more than 3 bytes (4-byte sequences are 2 units), and an
    // invalid byte decodes to one unit: 3 bytes per unit plus one partial sequence is enough.
    this.#max = capChars * 3 + 3;
    // Most outputs are short: the ring grows to its full size only when it has to.
    this.#ring = new Uint8Array(Math.min(this.#max, 4096));
  }

  /** Bytes pushed so far. */
  get totalBytes(): number {
    return this.#total;
  }

  push(chunk: Uint8Array): void {
    this.#total += chunk.length;
    if (this.#ring.length < this.#max) {
      // Still growing: bytes sit in order from index 0, nothing has wrapped yet.
      const need = this.#length + chunk.length;
      if (need > this.#ring.length) {
        const grown = new Uint8Array(Math.min(this.#max, Math.max(need, this.#ring.length * 2)));
        grown.set(this.#ring.subarray(0, this.#length));
        this.#ring = grown;
      }
      if (need <= this.#ring.length) {
        this.#ring.set(chunk, this.#length);
        this.#length = need;
        return;
      }
    }
    const size = this.#ring.length;
    const source = chunk.length > size ? chunk.subarray(chunk.length - size) : chunk;
    let end = (this.#start + this.#length) % size;
    const first = Math.min(source.length, size - end);
    this.#ring.set(source.subarray(0, first), end);
    this.#ring.set(source.subarray(first), 0);
    end = (end + source.length) % size;
    const length = Math.min(size, this.#length + source.length);
    this.#start = (end - length + size) % size;
    this.#length = length;
  }

  /**
   * The decoded tail, at most `capChars` UTF-16 units (never starting inside a character), and
   * how many bytes before it were left out. `omittedBytes` is exact: it counts raw bytes.
   */
  finish(maxChars: number = this.#capChars): { text: string; omittedBytes: number } {
    const bytes = this.#ordered();
    const decoder = new TextDecoder('utf-8');
    let offset = bytes.length === this.#total ? 0 : nextBoundary(bytes, 0);
    let text = decoder.decode(bytes.subarray(offset));
    if (text.length > maxChars) {
      // Smallest byte index whose next character boundary fits: both are monotone in the index.
      const fits = (at: number) => decoder.decode(bytes.subarray(nextBoundary(bytes, at))).length <= maxChars;
      let low = offset;
      let high = bytes.length;
      while (low < high) {
        const mid = (low + high) >>> 1;
        if (fits(mid)) high = mid;
        else low = mid + 1;
      }
      offset = nextBoundary(bytes, low);
      text = decoder.decode(bytes.subarray(offset));
    }
    return { text, omittedBytes: this.#total - (bytes.length - offset) };
  }

  #ordered(): Uint8Array {
    const size = this.#ring.length;
    if (this.#start + this.#length <= size)
      return this.#ring.subarray(this.#start, this.#start + this.#length);
    const out = new Uint8Array(this.#length);
    const first = size - this.#start;
    out.set(this.#ring.subarray(this.#start), 0);
    out.set(this.#ring.subarray(0, this.#length - first), first);
    return out;
  }
}

// Skips at most three UTF-8 continuation bytes, so decoding never starts inside a character.
function nextBoundary(bytes: Uint8Array, offset: number): number {
  let i = offset;
  while (i < bytes.length && i < offset + 3 && ((bytes[i] ?? 0) & 0xc0) === 0x80) i++;
  return i;
}
