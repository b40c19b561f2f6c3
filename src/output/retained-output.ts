import { TetherError } from '../errors.js';
import { giveSlab, SLAB_BYTES, takeSlab } from './byte-slabs.js';

/** What one read of a {@link RetainedOutput} returns (the registry passes it on as a `JobPage`). */
export interface OutputPage {
  readonly text: string;
  readonly cursor: number;
  readonly dropped: number;
  readonly lossy: boolean;
  /** The producer is finished (`close()`d) and everything retained was read. */
  readonly done: boolean;
}

/** Retained text: a string, or ASCII bytes (one character per byte) made into text when read. */
type Chunk = string | Buffer;

const textOf = (chunk: Chunk, from: number, to: number): string =>
  typeof chunk === 'string' ? chunk.slice(from, to) : chunk.toString('latin1', from, to);

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

/**
 * A producer's output (a job's, a terminal's): a bounded retention buffer read by a single consumer with a
 * forward-only cursor (SPEC J5). Positions are absolute character offsets since the job
 * started: `end` counts every character ever appended; the buffer retains at most `cap`
 * characters ending at `end` and never what was already read.
 *
 * The cursor rule, so nothing is ever duplicated or silently skipped:
 * - `cursor` inside the retained window: text from `cursor` on, `dropped: 0`.
 * - `cursor` behind the window (overflowed, or already read): text from the oldest retained
 *   character; `dropped` is the gap, `lossy: true`.
 * - `cursor` beyond `end`: `INVALID_ARGUMENT` ("cursor N is beyond the end M").
 * Reading consumes: everything before the returned cursor is released.
 *
 * @example
 * ```ts
 * const out = new RetainedOutput(4);
 * out.append('abcdef');
 * out.read(0, 10); // { text: 'cdef', cursor: 6, dropped: 2, lossy: true, done: false }
 * ```
 */
export class RetainedOutput {
  readonly cap: number;
  #chunks: Chunk[] = [];
  /** Index of the first live chunk in `#chunks`, and the offset of `start` inside it. */
  #first = 0;
  #head = 0;
  #start = 0;
  #end = 0;
  #closed = false;
  /** Slabs holding copied ASCII bytes (oldest first), each with the absolute end of its bytes. */
  #slabs: { readonly buf: Buffer; end: number }[] = [];
  #slabUsed = 0;

  /** `start`: the offset of the first character (K6: an adopted job's output goes on from there). */
  constructor(cap: number, start = 0) {
    this.cap = cap;
    this.#start = start;
    this.#end = start;
  }

  /** Absolute offset one past the last character ever appended. */
  get end(): number {
    return this.#end;
  }

  /** Characters currently held in memory (at most `cap`). */
  get retained(): number {
    return this.#end - this.#start;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Adds text at the end, dropping the oldest prefix beyond `cap`. Ignored once closed. */
  append(text: string): void {
    this.#add(text);
  }

  /**
   * Adds bytes that are all ASCII (the caller checked, `buffer.isAscii`): they count as one
   * character each and become a string only when read, so a flood keeps no strings alive.
   */
  appendAscii(bytes: Buffer): void {
    this.#add(bytes);
  }

  /**
   * Adds bytes that are all ASCII (the caller checked) by copying them: `bytes` may be reused
   * after the call (a reader's shared buffer). The copies go into recycled slabs, so a flood
   * allocates nothing per read (issue 30.6).
   */
  appendAsciiCopy(bytes: Uint8Array): void {
    if (this.#closed) return;
    for (let at = 0; at < bytes.length; ) {
      let slab = this.#slabs[this.#slabs.length - 1];
      if (slab === undefined || this.#slabUsed === SLAB_BYTES) {
        slab = { buf: takeSlab(), end: this.#end };
        this.#slabs.push(slab);
        this.#slabUsed = 0;
      }
      const n = Math.min(SLAB_BYTES - this.#slabUsed, bytes.length - at);
      slab.buf.set(bytes.subarray(at, at + n), this.#slabUsed);
      const view = slab.buf.subarray(this.#slabUsed, this.#slabUsed + n);
      this.#slabUsed += n;
      at += n;
      slab.end = this.#end + n;
      this.#add(view);
    }
  }

  #add(chunk: Chunk): void {
    if (this.#closed || chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#end += chunk.length;
    if (this.#end - this.#start > this.cap) this.#release(this.#end - this.cap, true);
  }

  /**
   * Drops up to `chars` of the oldest retained characters (a budget across outputs needs
   * room); the reader sees them as `dropped`, like an overflow. Returns how many were dropped.
   */
  dropOldest(chars: number): number {
    const before = this.retained;
    if (chars > 0 && before > 0) this.#release(this.#start + Math.min(chars, before), true);
    return before - this.retained;
  }

  /**
   * No more output will come: later appends are ignored and `done` can become true. A slab
   * whose retained bytes fill less than half of it has them copied out at their exact size and
   * goes back to the pool, so a finished job holds at most twice its unread ASCII characters.
   */
  close(): void {
    this.#closed = true;
    if (this.#slabs.length === 0) return;
    const live = new Map<ArrayBufferLike, number>(this.#slabs.map((s) => [s.buf.buffer, 0]));
    this.#eachSlabChunk((chunk, from, buffer) => {
      live.set(buffer, live.get(buffer)! + chunk.length - from);
    });
    const sparse = new Set([...live].filter(([, n]) => n < SLAB_BYTES / 2).map(([buffer]) => buffer));
    if (sparse.size === 0) return;
    this.#eachSlabChunk((chunk, from, buffer, i) => {
      if (!sparse.has(buffer)) return;
      const copy = Buffer.allocUnsafe(chunk.length - from);
      copy.set(chunk.subarray(from));
      this.#chunks[i] = copy;
      if (i === this.#first) this.#head = 0;
    });
    for (const slab of this.#slabs) if (sparse.has(slab.buf.buffer)) giveSlab(slab.buf);
    this.#slabs = this.#slabs.filter((slab) => !sparse.has(slab.buf.buffer));
  }

  // Calls `fn` for every retained chunk that is a view of a slab (`from`: where its live part starts).
  #eachSlabChunk(fn: (chunk: Buffer, from: number, buffer: ArrayBufferLike, index: number) => void): void {
    const slabs = new Set(this.#slabs.map((s) => s.buf.buffer));
    for (let i = this.#first; i < this.#chunks.length; i++) {
      const chunk = this.#chunks[i]!;
      if (typeof chunk !== 'string' && slabs.has(chunk.buffer))
        fn(chunk, i === this.#first ? this.#head : 0, chunk.buffer, i);
    }
  }

  /** The last `chars` retained characters, consuming nothing (an observer's view, V2). */
  peekTail(chars: number): string {
    let tail = '';
    for (let i = this.#chunks.length - 1; i >= this.#first && tail.length < chars; i--) {
      const chunk = this.#chunks[i]!;
      const from = Math.max(i === this.#first ? this.#head : 0, chunk.length - (chars - tail.length));
      tail = textOf(chunk, from, chunk.length) + tail;
    }
    return tail.length > chars ? tail.slice(-chars) : tail;
  }

  /** Reads up to `maxChars` from `cursor` under the cursor rule above; consumes what it returns. */
  read(cursor: number, maxChars: number): OutputPage {
    if (cursor > this.#end) {
      throw new TetherError(
        'INVALID_ARGUMENT',
        `cursor ${cursor} is beyond the end ${this.#end} of this output; ` +
          'pass the cursor returned by the previous read (or 0)',
      );
    }
    const from = Math.max(cursor, this.#start);
    this.#release(from, false);
    const text = this.#take(maxChars);
    this.#release(from + text.length, false);
    const next = from + text.length;
    const dropped = from - cursor;
    return { text, cursor: next, dropped, lossy: dropped > 0, done: this.#closed && next === this.#end };
  }

  // Up to `max` characters from the window start, never ending between the halves of a
  // retained surrogate pair unless the page can hold only one character. A page spanning
  // chunks is a rope of slices (no copy here; see `concatBalanced`), so a read costs
  // O(chunks in the page), never a copy of the page or of the retained buffer.
  #take(max: number): string {
    const parts: string[] = [];
    const want = Math.min(max, this.#end - this.#start);
    let need = want;
    let offset = this.#head;
    for (let i = this.#first; need > 0 && i < this.#chunks.length; i++) {
      const chunk = this.#chunks[i]!;
      const part =
        typeof chunk === 'string' && offset === 0 && need >= chunk.length
          ? chunk
          : textOf(chunk, offset, offset + need);
      parts.push(part);
      need -= part.length;
      offset = 0;
    }
    const more = want < this.#end - this.#start;
    const last = parts[parts.length - 1];
    // Looked up in the last part: `charCodeAt` on a rope would flatten (copy) it.
    if (more && last !== undefined && want > 1 && isHighSurrogate(last.charCodeAt(last.length - 1))) {
      if (last.length === 1) parts.pop();
      else parts[parts.length - 1] = last.slice(0, -1);
    }
    return concatBalanced(parts);
  }

  // Forgets everything before absolute offset `to`; an overflow also drops half a pair.
  #release(to: number, overflow: boolean): void {
    while (this.#start < to && this.#first < this.#chunks.length) {
      const chunk = this.#chunks[this.#first]!;
      const step = Math.min(chunk.length - this.#head, to - this.#start);
      this.#head += step;
      this.#start += step;
      if (this.#head === chunk.length) {
        // Unreferenced at once: a consumed slot must not keep its chunk alive until #compact.
        this.#chunks[this.#first] = '';
        this.#first++;
        this.#head = 0;
      }
    }
    if (overflow && this.#start < this.#end && isLowSurrogate(this.#charAtStart()))
      this.#release(this.#start + 1, false);
    this.#compact();
    this.#recycle();
  }

  // Gives back the slabs whose bytes were all released; the newest, once all of it is
  // released, is written again from its start (a reader that keeps up needs one slab).
  #recycle(): void {
    while (this.#slabs.length > 0 && this.#slabs[0]!.end <= this.#start) {
      if (this.#slabs.length === 1 && !this.#closed) {
        this.#slabUsed = 0;
        return;
      }
      giveSlab(this.#slabs.shift()!.buf);
    }
  }

  #charAtStart(): number {
    const chunk = this.#chunks[this.#first];
    return typeof chunk === 'string' ? chunk.charCodeAt(this.#head) : 0; // ASCII: never a surrogate
  }

  // Drops consumed chunk slots so the array does not grow with the job's lifetime.
  #compact(): void {
    if (this.#first === this.#chunks.length) {
      this.#chunks = [];
      this.#first = 0;
    } else if (this.#first > 1024 && this.#first * 2 > this.#chunks.length) {
      this.#chunks = this.#chunks.slice(this.#first);
      this.#first = 0;
    }
  }
}

// Joins `parts` as a balanced rope (V8 cons strings): no character is copied, and the tree is
// log2(parts) deep, so flattening it later (by whoever needs a flat string) never recurses
// deeply. `Array.prototype.join` would copy the whole page on every read (issue 15).
function concatBalanced(parts: string[]): string {
  if (parts.length === 0) return '';
  let level = parts;
  while (level.length > 1) {
    const next: string[] = [];
    for (let i = 0; i < level.length; i += 2)
      next.push(i + 1 < level.length ? level[i]! + level[i + 1]! : level[i]!);
    level = next;
  }
  return level[0]!;
}
