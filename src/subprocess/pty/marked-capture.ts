/**
 * The markers that delimit one command's output in a terminal's stream (T7's `execute`): the
 * body runs from `start` to `end`; a status follows `end` up to `close`; the capture is
 * complete once `prompt` appears after that.
 */
export interface CaptureMarks {
  readonly start: string;
  readonly end: string;
  readonly close: string;
  readonly prompt: string;
}

/** What a capture holds: its body's tail (at most the cap, `\r\n` folded to `\n`) and its status. */
export interface CaptureReport {
  readonly body: string;
  /** Characters of the body dropped from its front to keep it within the cap. */
  readonly omitted: number;
  /** The text between `end` and `close`, once both arrived; `null` before. */
  readonly status: string | null;
  /** `prompt` arrived after the status: the command is over. */
  readonly complete: boolean;
}

/** A report of nothing (a watch that ended before its start marker, or whose host died). */
export const EMPTY_CAPTURE: CaptureReport = { body: '', omitted: 0, status: null, complete: false };

/** A status longer than this is not one (garbage between the markers): it is cut here. */
const MAX_STATUS_CHARS = 64;

const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

/**
 * Finds a command's markers in a terminal's decoded output batch by batch, and keeps the body
 * between them within `capChars` (its tail). Every `push` costs O(batch): markers split
 * across batches are found through a carry shorter than the longest marker, and the body is a
 * list of slices trimmed from the front — nothing is re-scanned or re-joined until `report()`.
 * It runs in the PTY host worker (T7), so a flood costs the main thread nothing.
 *
 * @example
 * ```ts
 * const capture = new MarkedCapture({ start: 'S', end: 'E;', close: '\x07', prompt: 'P' }, 1_000);
 * capture.push('echo hiS'); capture.push('hi\r\nE;0\x07$ P'); // true
 * capture.report(); // { body: 'hi\n', omitted: 0, status: '0', complete: true }
 * ```
 */
export class MarkedCapture {
  readonly #marks: CaptureMarks;
  readonly #capChars: number;
  #state: 'before' | 'body' | 'status' | 'prompt' | 'done' = 'before';
  /** Unscanned end of the previous batch: it may hold the first part of a marker. */
  #carry = '';
  #body: string[] = [];
  #first = 0;
  #length = 0;
  #omitted = 0;
  #status = '';

  constructor(marks: CaptureMarks, capChars: number) {
    this.#marks = marks;
    this.#capChars = capChars;
  }

  get complete(): boolean {
    return this.#state === 'done';
  }

  /** Scans one batch; `true` once the capture is complete (later batches are ignored). */
  push(text: string): boolean {
    if (this.#state === 'done') return true;
    const s = this.#carry + text;
    this.#carry = '';
    const { start, end, close, prompt } = this.#marks;
    let at = 0;
    for (;;) {
      switch (this.#state) {
        case 'before': {
          // Interrupted before its start marker printed, the command never ran: no body.
          const e = s.indexOf(end, at);
          const b = s.indexOf(start, at);
          if (e >= 0 && (b < 0 || e < b)) {
            this.#state = 'status';
            at = e + end.length;
          } else if (b >= 0) {
            this.#state = 'body';
            at = b + start.length;
          } else {
            this.#carry = s.slice(Math.max(at, s.length - Math.max(start.length, end.length) + 1));
            return false;
          }
          break;
        }
        case 'body': {
          const e = s.indexOf(end, at);
          if (e >= 0) {
            this.#keep(s.slice(at, e));
            this.#state = 'status';
            at = e + end.length;
            break;
          }
          const held = Math.min(end.length - 1, s.length - at);
          this.#keep(s.slice(at, s.length - held));
          this.#carry = s.slice(s.length - held);
          return false;
        }
        case 'status': {
          const c = s.indexOf(close, at);
          this.#status = (this.#status + s.slice(at, c < 0 ? s.length : c)).slice(0, MAX_STATUS_CHARS);
          if (c < 0) return false;
          this.#state = 'prompt';
          at = c + close.length;
          break;
        }
        case 'prompt': {
          if (s.indexOf(prompt, at) >= 0) {
            this.#state = 'done';
            return true;
          }
          this.#carry = s.slice(Math.max(at, s.length - prompt.length + 1));
          return false;
        }
        default:
          return true;
      }
    }
  }

  /** The body so far (or whole, once complete) and the status. */
  report(): CaptureReport {
    const passed = this.#state === 'status' || this.#state === 'prompt' || this.#state === 'done';
    let body = this.#body.slice(this.#first).join('');
    // The end marker never came: what is held back as its possible start is body too.
    if (this.#state === 'body') body += this.#carry;
    return {
      body: body.replace(/\r\n/g, '\n'),
      omitted: this.#omitted,
      status: passed && this.#state !== 'status' ? this.#status : null,
      complete: this.#state === 'done',
    };
  }

  // Appends to the body and drops its front beyond the cap (never half a surrogate pair).
  #keep(part: string): void {
    if (part.length === 0) return;
    this.#body.push(part);
    this.#length += part.length;
    if (this.#length <= this.#capChars) return;
    while (this.#length > this.#capChars) {
      const head = this.#body[this.#first]!;
      const cut = Math.min(head.length, this.#length - this.#capChars);
      this.#drop(head, cut);
    }
    // The new front is the second half of a pair whose first half went: it goes too.
    while (this.#body[this.#first] === '') this.#first++;
    const head = this.#body[this.#first];
    if (head !== undefined && isLowSurrogate(head.charCodeAt(0))) this.#drop(head, 1);
    if (this.#first > 1024 && this.#first * 2 > this.#body.length) {
      this.#body = this.#body.slice(this.#first);
      this.#first = 0;
    }
  }

  #drop(head: string, cut: number): void {
    if (cut === head.length) this.#body[this.#first++] = '';
    else this.#body[this.#first] = head.slice(cut);
    this.#length -= cut;
    this.#omitted += cut;
  }
}
