/**
 * The remote helper's wire format (X2): length-prefixed frames, `>IB` (length counting the kind
 * byte, then the kind). `J` carries one JSON message, `D` numbered output (`>IBQ`: job number,
 * stream, byte offset of the first byte, then the bytes), `I` input for a job (`>I` job number,
 * then the bytes).
 */
export type HelperFrame =
  | { readonly kind: 'json'; readonly message: Record<string, unknown> }
  | {
      readonly kind: 'data';
      readonly n: number;
      readonly stream: number;
      readonly offset: number;
      readonly bytes: Buffer;
    };

const JSON_KIND = 0x4a;
const DATA_KIND = 0x44;
const INPUT_KIND = 0x49;

/** One JSON message as a frame. */
export function jsonFrame(message: Record<string, unknown>): Buffer {
  return withHeader(JSON_KIND, Buffer.from(JSON.stringify(message)));
}

/** Input bytes for job `n` as a frame. */
export function inputFrame(n: number, bytes: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(n);
  return withHeader(INPUT_KIND, Buffer.concat([head, bytes]));
}

function withHeader(kind: number, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length + 1);
  head.writeUInt8(kind, 4);
  return Buffer.concat([head, body]);
}

/**
 * Splits a byte stream into frames; chunks may cut frames anywhere.
 *
 * @example
 * ```ts
 * const reader = createFrameReader((frame) => console.log(frame.kind));
 * channel.on('data', reader);
 * ```
 */
export function createFrameReader(onFrame: (frame: HelperFrame) => void): (chunk: Buffer) => void {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  // Bytes the first pending frame needs in all (0: its header is not complete yet).
  let needed = 0;
  return (chunk) => {
    pending.push(chunk);
    pendingBytes += chunk.length;
    if (pendingBytes < 5) return;
    // A frame spread over many chunks is joined once, when it is complete, not per chunk.
    if (needed === 0)
      needed = 4 + (pending.length === 1 ? pending[0]! : Buffer.concat(pending, 4)).readUInt32BE(0);
    if (pendingBytes < needed) return;
    let buf = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
    let at = 0;
    while (buf.length - at >= 5) {
      const size = buf.readUInt32BE(at);
      if (buf.length - at < 4 + size) break;
      const kind = buf.readUInt8(at + 4);
      const body = buf.subarray(at + 5, at + 4 + size);
      at += 4 + size;
      if (kind === JSON_KIND) onFrame({ kind: 'json', message: JSON.parse(body.toString('utf8')) });
      else if (kind === DATA_KIND) {
        onFrame({
          kind: 'data',
          n: body.readUInt32BE(0),
          stream: body.readUInt8(4),
          offset: Number(body.readBigUInt64BE(5)),
          bytes: body.subarray(13),
        });
      }
    }
    buf = buf.subarray(at);
    pending = buf.length > 0 ? [buf] : [];
    pendingBytes = buf.length;
    needed = 0;
  };
}
