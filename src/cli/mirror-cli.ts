import type { MirrorOptions } from '../mirror/mirror-types.js';
import { UsageError } from './usage.js';

/**
 * `--port` and `--host` of the commands that serve the mirror (V2, V4: loopback unless told).
 *
 * @example
 * ```ts
 * mirrorAddress({ port: '7077' }, 'view'); // { port: 7077, host: '127.0.0.1' }
 * ```
 */
export function mirrorAddress(
  values: { readonly port?: string; readonly host?: string },
  command: string,
): MirrorOptions {
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(
      `--port must be a port number 0..65535 (0: any free one), got '${values.port}'`,
      command,
    );
  return { port, host: values.host ?? '127.0.0.1' };
}

/**
 * Resolves on the first SIGINT or SIGTERM (a server command's way to end), removing its handlers.
 *
 * @example
 * ```ts
 * await untilSignal();
 * await mirror.close();
 * ```
 */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const done = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve(signal);
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
  });
}
