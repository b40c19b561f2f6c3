import { TetherError } from '../errors.js';
import { createFrameReader, type HelperFrame, inputFrame, jsonFrame } from './helper-frames.js';
import type { SshLink } from './ssh-connection.js';

/** What the helper sends unasked: numbered output, stream ends and exits, per job number. */
export interface HelperEvents {
  data(n: number, stream: number, offset: number, bytes: Buffer): void;
  event(message: Record<string, unknown>): void;
}

/**
 * Requests and events over one relay channel to the helper daemon. When the channel or its
 * connection ends, every request in flight rejects with PROVIDER_LOST (X3) and `lost` resolves.
 */
export interface HelperChannel {
  request(message: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** A message that gets no reply (ack, eof, resize). */
  notify(message: Record<string, unknown>): void;
  /** Input for job `n`; resolves when the channel took it (its flow control). */
  input(n: number, bytes: Buffer): Promise<void>;
  readonly alive: boolean;
  /** Resolves with the reason once the channel is gone. */
  readonly lost: Promise<string>;
  /** Ends the channel and the connection; never waits on the remote side. */
  close(): void;
}

/**
 * Wraps an {@link SshLink}: `label` (user@host:port) goes into every error.
 *
 * @example
 * ```ts
 * const helper = createHelperChannel(link, 'ci@build-1:22', events);
 * const hello = await helper.request({ op: 'hello' });
 * ```
 */
export function createHelperChannel(link: SshLink, label: string, events: HelperEvents): HelperChannel {
  const { client, channel } = link;
  const pending = new Map<number, { resolve(v: Record<string, unknown>): void; reject(e: Error): void }>();
  const writes = new Set<(err: Error) => void>();
  let nextId = 0;
  let reason: string | null = null;
  let markLost!: (why: string) => void;
  const lost = new Promise<string>((resolve) => {
    markLost = resolve;
  });
  const lose = (why: string) => {
    if (reason !== null) return;
    reason = why;
    for (const p of pending.values()) p.reject(lostError(label, why));
    pending.clear();
    // A write stalled on the SSH window (a stopped server) never calls back: it fails here.
    for (const reject of writes) reject(lostError(label, why));
    writes.clear();
    client.destroy();
    markLost(why);
  };
  const onFrame = (frame: HelperFrame) => {
    if (frame.kind === 'data') return events.data(frame.n, frame.stream, frame.offset, frame.bytes);
    const { message } = frame;
    if (typeof message.id === 'number') {
      const p = pending.get(message.id);
      pending.delete(message.id);
      if (message.ok === true) p?.resolve(message);
      else
        p?.reject(
          new TetherError((message.code as 'SPAWN_FAILED') ?? 'SPAWN_FAILED', String(message.message)),
        );
      return;
    }
    events.event(message);
  };
  const read = createFrameReader(onFrame);
  channel.on('data', read);
  channel.on('close', () => {
    const last = link.stderr().trim().split('\n').pop();
    lose(last ? `the helper channel closed (${last})` : 'the helper channel closed');
  });
  client.on('error', (err: Error) => lose(err.message));
  client.on('close', () => lose('the connection closed'));
  if (link.leftover.length > 0) read(link.leftover);
  channel.resume();

  const write = (frame: Buffer): Promise<void> =>
    new Promise((resolve, reject) => {
      if (reason !== null) return reject(lostError(label, reason));
      writes.add(reject);
      channel.write(frame, (err) => {
        writes.delete(reject);
        if (err) reject(lostError(label, err.message));
        else resolve();
      });
    });
  return {
    request(message) {
      if (reason !== null) return Promise.reject(lostError(label, reason));
      const id = ++nextId;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        channel.write(jsonFrame({ ...message, id }));
      });
    },
    notify(message) {
      if (reason === null) channel.write(jsonFrame(message));
    },
    input: (n, bytes) => write(inputFrame(n, bytes)),
    get alive() {
      return reason === null;
    },
    lost,
    close() {
      if (reason === null) channel.end();
      lose('closed by the provider');
    },
  };
}

/**
 * The error of a call whose host went away (X3): names the host and what happens next.
 *
 * @example
 * ```ts
 * throw lostError('ci@build-1:22', 'Keepalive timeout');
 * ```
 */
export function lostError(label: string, why: string): TetherError {
  return new TetherError(
    'PROVIDER_LOST',
    `the SSH connection to ${label} was lost (${why}); remote jobs re-attach when it comes back, retry the call then`,
  );
}
