import { describe, expect, it } from 'vitest';
import { createFrameReader, type HelperFrame, jsonFrame } from '../../src/remote/helper-frames.js';

// A data frame as the helper writes it: `>IBIBQ` then the bytes (tether-helper.py, pump).
function dataFrame(n: number, stream: number, offset: number, bytes: Buffer): Buffer {
  const head = Buffer.alloc(18);
  head.writeUInt32BE(bytes.length + 14, 0);
  head.writeUInt8(0x44, 4);
  head.writeUInt32BE(n, 5);
  head.writeUInt8(stream, 9);
  head.writeBigUInt64BE(BigInt(offset), 10);
  return Buffer.concat([head, bytes]);
}

describe('helper frames (X2)', () => {
  it('X2: frames cut at every byte boundary, headers included, arrive in order with nothing lost or doubled', () => {
    const payload = Buffer.from('héllo wörld '.repeat(40));
    const wire = Buffer.concat([
      dataFrame(3, 1, 0, payload),
      jsonFrame({ ev: 'eof', n: 3, stream: 1 }),
      dataFrame(3, 2, 7, Buffer.from('x')),
    ]);
    for (const step of [1, 2, 3, 5, 17, 4096]) {
      const frames: HelperFrame[] = [];
      const read = createFrameReader((f) => frames.push(f));
      for (let at = 0; at < wire.length; at += step) read(wire.subarray(at, at + step));
      // A data frame's body may come as several pieces; their offsets follow on without a gap.
      const pieces = frames.slice(
        0,
        frames.findIndex((f) => f.kind === 'json'),
      );
      let next = 0;
      for (const piece of pieces) {
        expect(piece).toMatchObject({ kind: 'data', n: 3, stream: 1, offset: next });
        next += (piece as { bytes: Buffer }).bytes.length;
      }
      const whole = Buffer.concat(pieces.map((p) => (p as { bytes: Buffer }).bytes));
      expect(Buffer.compare(whole, payload)).toBe(0);
      // Pieces are views of the chunks they came in: a body is never joined.
      for (const piece of pieces) expect((piece as { bytes: Buffer }).bytes.length).toBeLessThanOrEqual(step);
      if (step >= wire.length) expect(pieces).toHaveLength(1);
      expect(frames.slice(pieces.length)).toEqual([
        { kind: 'json', message: { ev: 'eof', n: 3, stream: 1 } },
        { kind: 'data', n: 3, stream: 2, offset: 7, bytes: Buffer.from('x') },
      ]);
    }
  });
});
