import type { Duplex } from 'node:stream';

/**
 * One open byte stream to a greeted remote helper (X2, X5), whatever carries it: an SSH exec
 * channel, the stdin and stdout of `podman exec`, `kubectl exec`. The helper channel speaks the
 * helper protocol over `stream`; the transport only says when it is down and how to end it.
 *
 * @example
 * ```ts
 * const link = await openExecLink({ argv: ['podman', 'exec', '-i', 'c1'], label: 'podman:c1', … });
 * const helper = createHelperChannel(link, link.label ?? 'podman:c1', events);
 * ```
 */
export interface HelperLink {
  /** What carries the stream, for messages: 'SSH connection', 'exec link'. */
  readonly kind: string;
  /** Bytes to and from the helper, paused; the greeting line already read. */
  readonly stream: Duplex;
  /** Bytes that came after the greeting line (the first frames). */
  readonly leftover: Buffer;
  /** The transport's stderr so far (the helper's complaint when it dies). */
  stderr(): string;
  /** Ends the transport at once (the connection, the exec process); never waits. */
  destroy(): void;
  /** `listener` hears (possibly more than once) that the transport itself failed or ended. */
  onDown(listener: (why: string) => void): void;
}
