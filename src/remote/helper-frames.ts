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
// A data frame's head: `>IB` then `>IBQ`.
const DATA_HEAD = 18;

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
 * Splits a byte stream into frames; chunks may cut frames anywhere. A data frame's bytes pass
 * through as they arrive, as several `data` frames with consecutive offsets when chunks cut it:
 * its body is never joined (a remote flood would otherwise be copied once more here).
 *
 * @example
 * ```ts
 * const reader = createFrameReader((frame) => console.log(frame.kind));
 * channel.on('data', reader);
 * ```
 */
export function createFrameReader(onFrame: (frame: HelperFrame) => void): (chunk: Buffer) => void {
  // The start of a frame whose head is not complete yet.
  let parts: Buffer[] = [];
  let have = 0;
  // The data frame whose head was read: what is left of its body.
  let body: { n: number; stream: number; offset: number; left: number } | null = null;
  // Bytes of a frame needed before it can be handled: all of a JSON frame, a data frame's head.
  const wantedBy = (head: Buffer) =>
    head.length < 5 ? 5 : head.readUInt8(4) === DATA_KIND ? DATA_HEAD : 4 + head.readUInt32BE(0);
  const handle = (head: Buffer) => {
    const kind = head.readUInt8(4);
    if (kind === JSON_KIND) onFrame({ kind: 'json', message: JSON.parse(head.toString('utf8', 5)) });
    else if (kind === DATA_KIND) {
      const left = head.readUInt32BE(0) + 4 - DATA_HEAD;
      body = {
        n: head.readUInt32BE(5),
        stream: head.readUInt8(9),
        offset: Number(head.readBigUInt64BE(10)),
        left,
      };
      if (left <= 0) body = null;
    }
  };
  return (chunk) => {
    let at = 0;
    while (at < chunk.length) {
      if (body !== null) {
        const size = Math.min(body.left, chunk.length - at);
        const { n, stream, offset } = body;
        body.offset += size;
        body.left -= size;
        if (body.left === 0) body = null;
        onFrame({ kind: 'data', n, stream, offset, bytes: chunk.subarray(at, at + size) });
        at += size;
        continue;
      }
      for (let wanted = 5; ; ) {
        if (have + chunk.length - at < wanted) {
          parts.push(chunk.subarray(at));
          have += chunk.length - at;
          return;
        }
        // In the chunk itself when nothing is pending (no copy), else joined once.
        const head =
          have === 0
            ? chunk.subarray(at, at + wanted)
            : Buffer.concat([...parts, chunk.subarray(at, at + wanted - have)]);
        const next = wantedBy(head);
        if (next > wanted) {
          wanted = next;
          continue;
        }
        at += wanted - have;
        parts = [];
        have = 0;
        handle(head);
        break;
      }
    }
  };
}
