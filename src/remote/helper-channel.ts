import { TetherError } from '../errors.js';
import { createFrameReader, type HelperFrame, inputFrame, jsonFrame } from './helper-frames.js';
import type { HelperLink } from './helper-link.js';

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
 * Runs the helper protocol over a {@link HelperLink}'s plain duplex byte stream (X5: SSH or any
 * exec transport): `label` (user@host:port, podman:c1) goes into every error.
 *
 * @example
 * ```ts
 * const helper = createHelperChannel(link, 'ci@build-1:22', events);
 * const hello = await helper.request({ op: 'hello' });
 * ```
 */
export function createHelperChannel(
  link: HelperLink,
  label: string,
  events: HelperEvents,
  heartbeat?: Heartbeat,
): HelperChannel {
  const { stream: channel, kind } = link;
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
    for (const p of pending.values()) p.reject(lostError(label, why, kind));
    pending.clear();
    // A write stalled on the transport's window (a stopped server) never calls back: it fails here.
    for (const reject of writes) reject(lostError(label, why, kind));
    writes.clear();
    link.destroy();
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
  // Bytes from the helper so far: a helper that is sending is alive (the heartbeat).
  let heard = 0;
  channel.on('data', (chunk: Buffer) => {
    heard += chunk.length;
    read(chunk);
  });
  channel.on('close', () => {
    const last = link.stderr().trim().split('\n').pop();
    lose(last ? `the helper channel closed (${last})` : 'the helper channel closed');
  });
  // An exec stream reports a write to a dead process as an error: the channel is lost.
  channel.on('error', (err: Error) => lose(err.message));
  link.onDown(lose);
  if (link.leftover.length > 0) read(link.leftover);
  channel.resume();

  const write = (frame: Buffer): Promise<void> =>
    new Promise((resolve, reject) => {
      if (reason !== null) return reject(lostError(label, reason, kind));
      writes.add(reject);
      channel.write(frame, (err) => {
        writes.delete(reject);
        if (err) reject(lostError(label, err.message, kind));
        else resolve();
      });
    });
  const request = (message: Record<string, unknown>): Promise<Record<string, unknown>> => {
    if (reason !== null) return Promise.reject(lostError(label, reason, kind));
    const id = ++nextId;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      channel.write(jsonFrame({ ...message, id }));
    });
  };
  if (heartbeat !== undefined) beat(heartbeat, request, () => heard, lost, lose);
  return {
    request,
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
 * A probe the helper answers at once, every `intervalMs`; no answer within `intervalMs × countMax`
 * loses the channel (X3). For transports without a keepalive of their own (an exec stream notices
 * a stall only when its process exits); SSH has its own.
 */
export interface Heartbeat {
  readonly intervalMs: number;
  readonly countMax: number;
}

// Any reply proves the helper alive: `ping` is not an op, so the helper answers with a refusal
// (no protocol change). So does anything it sent meanwhile: a helper busy with hundreds of kills
// answers late but is not dead (its verdicts arrive), and dropping its link mid-dispose left the
// trees running (D2). Stops when the channel is lost.
//
// Plain timers, one at a time per link: a loop of `timers/promises` sleeps with AbortSignals cost
// ~0.33 ms of CPU a beat (scratch, 400 links' beats with an instant reply); with 400 idle links
// this process's CPU fell from 94.6 to 68.5 ms/s with this (docs/SCALE.md).
function beat(
  { intervalMs, countMax }: Heartbeat,
  request: (message: Record<string, unknown>) => Promise<unknown>,
  heard: () => number,
  lost: Promise<string>,
  lose: (why: string) => void,
): void {
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  void lost.then(() => {
    ended = true;
    clearTimeout(timer);
  });
  const wait = () => {
    if (!ended) timer = setTimeout(ping, intervalMs);
  };
  const ping = () => {
    const before = heard();
    let settled = false;
    // Whichever comes first, the reply or the bound, decides; the other one does nothing.
    const settle = (answered: boolean) => {
      if (settled || ended) return;
      settled = true;
      clearTimeout(timer);
      if (!answered && heard() === before)
        lose(`no answer from the helper within ${intervalMs * countMax} ms`);
      else wait();
    };
    timer = setTimeout(() => settle(false), intervalMs * countMax);
    request({ op: 'ping' }).then(
      () => settle(true),
      () => settle(true),
    );
  };
  wait();
}

/**
 * The error of a call whose host went away (X3): names the host and what happens next.
 *
 * @example
 * ```ts
 * throw lostError('ci@build-1:22', 'Keepalive timeout');
 * ```
 */
export function lostError(label: string, why: string, kind = 'SSH connection'): TetherError {
  return new TetherError(
    'PROVIDER_LOST',
    `the ${kind} to ${label} was lost (${why}); remote jobs re-attach when it comes back, retry the call then`,
  );
}
