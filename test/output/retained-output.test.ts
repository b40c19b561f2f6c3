import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TetherError } from '../../src/errors.js';
import { idleSlabs, SLAB_BYTES } from '../../src/output/byte-slabs.js';
import { RetainedOutput } from '../../src/output/retained-output.js';

describe('RetainedOutput', () => {
  it('J5: reading consumes, forward-only, without duplicates', () => {
    const out = new RetainedOutput(100);
    out.append('hello ');
    expect(out.read(0, 3)).toEqual({ text: 'hel', cursor: 3, dropped: 0, lossy: false, done: false });
    out.append('world');
    expect(out.read(3, 100)).toEqual({ text: 'lo world', cursor: 11, dropped: 0, lossy: false, done: false });
    expect(out.read(11, 100)).toMatchObject({ text: '', cursor: 11, done: false });
    out.close();
    expect(out.read(11, 100)).toMatchObject({ text: '', cursor: 11, done: true });
    expect(out.retained).toBe(0);
  });

  it('J5: beyond the retention cap the oldest prefix is dropped and the page is lossy', () => {
    const out = new RetainedOutput(4);
    out.append('abc');
    out.append('def');
    expect(out.retained).toBe(4);
    expect(out.read(0, 10)).toEqual({ text: 'cdef', cursor: 6, dropped: 2, lossy: true, done: false });
  });

  it('J5: a cursor behind the retained window (already read) reads on from the window with the gap as dropped', () => {
    const out = new RetainedOutput(100);
    out.append('0123456789');
    out.read(0, 6);
    out.append('ab');
    expect(out.read(2, 100)).toEqual({ text: '6789ab', cursor: 12, dropped: 4, lossy: true, done: false });
  });

  it('J5: a cursor beyond the end is INVALID_ARGUMENT and names both numbers', () => {
    const out = new RetainedOutput(100);
    out.append('abc');
    try {
      out.read(7, 10);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(TetherError);
      expect((err as TetherError).code).toBe('INVALID_ARGUMENT');
      expect((err as Error).message).toContain('cursor 7 is beyond the end 3');
    }
  });

  it('J5: a page never ends between the halves of a surrogate pair, and overflow drops whole pairs', () => {
    const out = new RetainedOutput(100);
    out.append('a😀b');
    expect(out.read(0, 2)).toMatchObject({ text: 'a', cursor: 1 });
    expect(out.read(1, 2)).toMatchObject({ text: '😀', cursor: 3 });
    const small = new RetainedOutput(2);
    small.append('x😀');
    small.append('y');
    expect(small.read(0, 10)).toMatchObject({ text: 'y', dropped: 3 });
  });

  it('J5: text + dropped always adds up to everything appended (any appends, caps and page sizes)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 40 }), { maxLength: 30 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.boolean(), { maxLength: 60 }),
        (chunks, cap, pageSize, readSchedule) => {
          const out = new RetainedOutput(cap);
          let cursor = 0;
          let seen = 0;
          let schedule = 0;
          const readOnce = () => {
            const page = out.read(cursor, pageSize);
            expect(page.cursor).toBe(cursor + page.dropped + page.text.length);
            seen += page.text.length + page.dropped;
            cursor = page.cursor;
            return page;
          };
          for (const chunk of chunks) {
            out.append(chunk);
            if (readSchedule[schedule++ % Math.max(1, readSchedule.length)]) readOnce();
            expect(out.retained).toBeLessThanOrEqual(cap);
          }
          out.close();
          while (!readOnce().done) {}
          expect(seen).toBe(chunks.join('').length);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('J5: dropOldest releases the oldest characters as a reader-visible gap, never half a surrogate pair', () => {
    const out = new RetainedOutput(100);
    out.append('abcdef');
    expect(out.dropOldest(3)).toBe(3);
    expect(out.read(0, 10)).toMatchObject({ text: 'def', dropped: 3, lossy: true });
    out.append('x😀y');
    expect(out.dropOldest(2)).toBe(3); // 'x' and the pair's high half take the low half with them
    expect(out.read(6, 10)).toMatchObject({ text: 'y', dropped: 3 });
    out.append('zz');
    expect(out.dropOldest(10)).toBe(2);
    expect(out.dropOldest(1)).toBe(0);
  });

  it('J5: pages that span many chunks read back exactly what was appended (any chunking, page sizes, surrogate pairs)', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'é', '😀', '\r', '\n', '\x1b'), maxLength: 60 });
    fc.assert(
      fc.property(fc.array(text, { maxLength: 80 }), fc.integer({ min: 1, max: 400 }), (chunks, pageSize) => {
        const out = new RetainedOutput(1 << 20);
        for (const chunk of chunks) out.append(chunk);
        out.close();
        let cursor = 0;
        let read = '';
        for (;;) {
          const page = out.read(cursor, pageSize);
          expect(page.dropped).toBe(0);
          read += page.text;
          cursor = page.cursor;
          if (page.done) break;
          expect(page.text.length).toBeGreaterThan(0);
        }
        expect(read).toBe(chunks.join(''));
      }),
      { numRuns: 300 },
    );
  });

  it('J5: ASCII bytes and strings mixed read back exactly, with the same caps, gaps and tails', () => {
    const piece = fc.oneof(
      fc
        .string({ unit: fc.constantFrom('a', 'é', '😀', '\n'), maxLength: 30 })
        .map((text) => ({ text, bytes: false })),
      fc
        .string({ unit: fc.constantFrom('b', 'c', '\n'), maxLength: 30 })
        .map((text) => ({ text, bytes: true })),
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 40 }),
        fc.integer({ min: 1, max: 200 }),
        fc.integer({ min: 1, max: 50 }),
        (pieces, cap, pageSize) => {
          const mixed = new RetainedOutput(cap);
          const strings = new RetainedOutput(cap);
          for (const { text, bytes } of pieces) {
            if (bytes) mixed.appendAscii(Buffer.from(text, 'latin1'));
            else mixed.append(text);
            strings.append(text);
            expect(mixed.retained).toBe(strings.retained);
            expect(mixed.peekTail(7)).toBe(strings.peekTail(7));
          }
          mixed.close();
          strings.close();
          for (let cursor = 0; ; ) {
            const page = mixed.read(cursor, pageSize);
            expect(page).toEqual(strings.read(cursor, pageSize));
            cursor = page.cursor;
            if (page.done) break;
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('J5 (issue 30.6): ASCII copied from a reused buffer into slabs reads back exactly, across slabs, overflows, drops and close', () => {
    // Pieces up to 1.5 slabs long, so copies cross slab boundaries; `copy` pieces come from one
    // scratch buffer that is overwritten right after each call, as a reader's shared buffer is.
    const scratch = Buffer.alloc(SLAB_BYTES * 2);
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('text' as const),
        text: fc.string({ unit: fc.constantFrom('a', 'é', '😀', '\n'), maxLength: 20 }),
      }),
      fc.record({
        kind: fc.constant('copy' as const),
        n: fc.integer({ min: 1, max: (SLAB_BYTES * 3) / 2 }),
        c: fc.constantFrom('x', 'y', 'z'),
      }),
      fc.record({ kind: fc.constant('bytes' as const), n: fc.integer({ min: 1, max: 5_000 }) }),
      fc.record({ kind: fc.constant('read' as const), max: fc.integer({ min: 1, max: SLAB_BYTES }) }),
      fc.record({ kind: fc.constant('drop' as const), n: fc.integer({ min: 1, max: SLAB_BYTES }) }),
      fc.record({ kind: fc.constant('close' as const) }),
    );
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 25 }),
        fc.integer({ min: 1, max: SLAB_BYTES * 3 }),
        (steps, cap) => {
          const slabs = new RetainedOutput(cap);
          const model = new RetainedOutput(cap);
          let cursor = 0;
          for (const s of steps) {
            if (s.kind === 'text') {
              slabs.append(s.text);
              model.append(s.text);
            } else if (s.kind === 'copy') {
              // Distinct content per position, so a wrong offset or a reused byte shows.
              for (let i = 0; i < s.n; i++) scratch[i] = 0x61 + ((i * 7 + s.c.charCodeAt(0)) % 26);
              const text = scratch.toString('latin1', 0, s.n);
              slabs.appendAsciiCopy(scratch.subarray(0, s.n));
              scratch.fill(0x3f, 0, s.n); // the reader's buffer is reused
              model.append(text);
            } else if (s.kind === 'bytes') {
              const text = 'b'.repeat(s.n);
              slabs.appendAscii(Buffer.from(text, 'latin1'));
              model.append(text);
            } else if (s.kind === 'read') {
              const page = slabs.read(cursor, s.max);
              expect(page).toEqual(model.read(cursor, s.max));
              cursor = page.cursor;
            } else if (s.kind === 'drop') {
              expect(slabs.dropOldest(s.n)).toBe(model.dropOldest(s.n));
            } else {
              slabs.close();
              model.close();
            }
            expect(slabs.retained).toBe(model.retained);
            expect(slabs.end).toBe(model.end);
            expect(slabs.peekTail(9)).toBe(model.peekTail(9));
          }
          slabs.close();
          model.close();
          for (;;) {
            const page = slabs.read(cursor, 70_000);
            expect(page).toEqual(model.read(cursor, 70_000));
            cursor = page.cursor;
            if (page.done) break;
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('J5 (issue 30.6): slabs go back to the pool once read, and a finished output keeps only what it holds', () => {
    const scratch = Buffer.alloc(65_536, 0x61);
    const out = new RetainedOutput(5 * SLAB_BYTES);
    for (let i = 0; i < 8; i++) out.appendAsciiCopy(scratch); // 4 slabs of bytes, all retained
    expect(out.retained).toBe(4 * SLAB_BYTES);
    const before = idleSlabs();
    out.appendAsciiCopy(scratch.subarray(0, 100)); // a fifth slab, nearly empty
    out.close(); // the nearly empty one is copied out and given back
    expect(idleSlabs()).toBe(Math.min(64, before + 1));
    let text = '';
    for (let cursor = 0; ; ) {
      const page = out.read(cursor, 100_000);
      text += page.text;
      cursor = page.cursor;
      if (page.done) break;
    }
    expect(text.length).toBe(4 * SLAB_BYTES + 100);
    expect(text === 'a'.repeat(4 * SLAB_BYTES + 100)).toBe(true);
    expect(idleSlabs()).toBe(Math.min(64, before + 5));
  });
});
