import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MarkedCapture } from '../../../src/subprocess/pty/marked-capture.js';
import { executionMarks } from '../../../src/terminals/shell-protocol.js';

const NONCE = '0123456789abcdef';
const marks = executionMarks(NONCE);

// Text that looks like the machinery: marker prefixes, other nonces, BELs, CR LF, surrogate pairs.
const noisy = fc.string({
  unit: fc.constantFrom(
    'a',
    '\r',
    '\n',
    '\r\n',
    '😀',
    '\x07',
    '\x1b',
    '\x1b]697;',
    '\x1b]697;E;',
    '\x1b]697;S;0123',
    '\x1b]697;P',
  ),
  maxLength: 80,
});

// Cuts `text` into batches at the given points (any point, inside markers too).
function batches(text: string, cuts: number[]): string[] {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const cut of at) {
    out.push(text.slice(from, cut));
    from = cut;
  }
  out.push(text.slice(from));
  return out;
}

// What the capture must hold for `body` under `cap`: its raw tail (never half a pair), folded.
function expected(body: string, cap: number): { body: string; omitted: number } {
  let cut = Math.max(0, body.length - cap);
  const code = body.charCodeAt(cut);
  if (cut > 0 && code >= 0xdc00 && code <= 0xdfff) cut++;
  return { body: body.slice(cut).replace(/\r\n/g, '\n'), omitted: cut };
}

describe('MarkedCapture (T7: execute’s marker search, run in the PTY worker)', () => {
  it('T7: body and status are exact however the stream is cut into batches, markers split across batch boundaries too', () => {
    fc.assert(
      fc.property(
        noisy.filter((s) => !s.includes(marks.end)),
        noisy.filter((s) => !s.includes(marks.end) && !s.includes(marks.start)),
        fc.integer({ min: 0, max: 255 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (echo, body, status, cuts) => {
          const stream = `${echo}${marks.start}${body}${marks.end}${status}\x07$ ${marks.prompt}after`;
          const capture = new MarkedCapture(marks, 1 << 20);
          const done = batches(stream, cuts).map((b) => capture.push(b));
          expect(done[done.length - 1]).toBe(true);
          expect(capture.report()).toEqual({
            body: body.replace(/\r\n/g, '\n'),
            omitted: 0,
            status: String(status),
            complete: true,
          });
        },
      ),
      { numRuns: 500 },
    );
  });

  it('T7: a body over the cap keeps exactly its last capChars (never half a surrogate pair) and counts the rest', () => {
    fc.assert(
      fc.property(
        noisy.filter((s) => !s.includes(marks.end)),
        fc.integer({ min: 1, max: 40 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (body, cap, cuts) => {
          const capture = new MarkedCapture(marks, cap);
          for (const b of batches(`${marks.start}${body}${marks.end}0\x07${marks.prompt}`, cuts))
            capture.push(b);
          expect(capture.report()).toEqual({ ...expected(body, cap), status: '0', complete: true });
        },
      ),
      { numRuns: 500 },
    );
  });

  it('T7: before the end marker, the report is the body so far (nothing held back) and not complete', () => {
    const capture = new MarkedCapture(marks, 1 << 20);
    expect(capture.push(`echo${marks.start}partial\r\nout\x1b]697;E;${NONCE.slice(0, 4)}`)).toBe(false);
    expect(capture.report()).toEqual({
      body: `partial\nout\x1b]697;E;${NONCE.slice(0, 4)}`,
      omitted: 0,
      status: null,
      complete: false,
    });
    // Interrupted before its start marker: no body, but the status still counts.
    const never = new MarkedCapture(marks, 100);
    expect(never.push(`^C${marks.end}130\x07$ ${marks.prompt}`)).toBe(true);
    expect(never.report()).toEqual({ body: '', omitted: 0, status: '130', complete: true });
  });

  it('T7: a 200 MB line costs O(batch) per push: the retained body never exceeds the cap', () => {
    const capture = new MarkedCapture(marks, 1 << 20);
    capture.push(marks.start);
    const batch = 'x'.repeat(65_536);
    for (let i = 0; i < 3_200; i++) capture.push(batch);
    capture.push(`tail${marks.end}0\x07${marks.prompt}`);
    const report = capture.report();
    expect(report.body.length).toBe(1 << 20);
    expect(report.body.endsWith('xtail')).toBe(true);
    expect(report.omitted + report.body.length).toBe(3_200 * 65_536 + 4);
  });
});
