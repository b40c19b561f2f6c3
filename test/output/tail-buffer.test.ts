import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TailBuffer } from '../../src/output/tail-buffer.js';

// Pushes `bytes` in the given chunk sizes (cycled), like a pipe delivering reads.
function pushAll(tail: TailBuffer, bytes: Uint8Array, sizes: number[]): void {
  let offset = 0;
  for (let i = 0; offset < bytes.length; i++) {
    const size = sizes[i % sizes.length] ?? 1;
    tail.push(bytes.subarray(offset, offset + size));
    offset += size;
  }
}

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe('TailBuffer', () => {
  it('C2: any bytes in any chunking: the text is exactly the decoded suffix after omittedBytes, within the cap', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 400 }),
        fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1 }),
        fc.integer({ min: 1, max: 60 }),
        (bytes, sizes, cap) => {
          const tail = new TailBuffer(cap);
          pushAll(tail, bytes, sizes);
          const { text, omittedBytes } = tail.finish();
          expect(text.length).toBeLessThanOrEqual(cap);
          expect(text).toBe(decode(bytes.subarray(omittedBytes)));
          expect(tail.totalBytes).toBe(bytes.length);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('C2: valid UTF-8 split anywhere: the text is a suffix of the whole, never a mangled character', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 200 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1 }),
        fc.integer({ min: 2, max: 80 }),
        (whole, sizes, cap) => {
          const tail = new TailBuffer(cap);
          pushAll(tail, new TextEncoder().encode(whole), sizes);
          const { text, omittedBytes } = tail.finish();
          expect(whole.endsWith(text)).toBe(true);
          if (!whole.includes('\uFFFD')) expect(text).not.toContain('\uFFFD');
          if (omittedBytes === 0) expect(text).toBe(whole);
          else expect(text.length).toBeGreaterThanOrEqual(cap - 1);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('C2: a chunk larger than the ring keeps only its end', () => {
    const tail = new TailBuffer(10);
    tail.push(new TextEncoder().encode(`${'x'.repeat(1000)}0123456789`));
    expect(tail.finish()).toEqual({ text: '0123456789', omittedBytes: 1000 });
  });
});
