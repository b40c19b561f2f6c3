import ssh2 from 'ssh2';
import { TetherError } from '../errors.js';
import { bootstrapHelper, helperArgv } from './helper-bootstrap.js';
import type { HelperLink } from './helper-link.js';
import type { ResolvedSshOptions } from './ssh-options.js';

/**
 * Connects, verifies the host key, authenticates, uploads the helper when this version is not
 * there yet and opens the relay channel to its daemon (X1, X2). Every failure is a
 * PROVIDER_UNAVAILABLE that names the host and what to fix; nothing is started remotely.
 *
 * @example
 * ```ts
 * const link = await openSshLink(resolveSshOptions({ host, username, privateKey, hostKey }));
 * ```
 */
export async function openSshLink(options: ResolvedSshOptions, signal?: AbortSignal): Promise<HelperLink> {
  const client = await connectClient(options, signal);
  const onAbort = () => client.destroy(); // the bootstrap under way fails with the channel
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await openHelperChannel(client, options);
  } catch (err) {
    client.destroy();
    throw err;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

// `signal` ends a handshake under way (dispose): a stalled server would hold it to readyTimeout.
function connectClient(options: ResolvedSshOptions, signal?: AbortSignal): Promise<ssh2.Client> {
  const client = new ssh2.Client();
  let hostKeyRejected = false;
  const expected = options.hostKey === undefined ? null : keyBlob(options.hostKey);
  const verify = options.hostVerifier ?? ((key: Buffer) => expected !== null && key.equals(expected));
  // ssh2 can emit a second error after the first (`Connection lost before handshake` once a
  // handshake timed out or was abandoned), and errors after 'ready' are the link's (its onDown
  // hears 'close'): none of them may be an uncaught exception.
  client.on('error', () => {});
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      client.off('ready', onReady);
      client.destroy();
      reject(new TetherError('RUNTIME_DISPOSED', `the connect to ${options.label} was abandoned (disposed)`));
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const onError = (err: Error & { level?: string }) => {
      signal?.removeEventListener('abort', onAbort);
      client.off('ready', onReady);
      client.destroy();
      reject(connectError(options, err, hostKeyRejected));
    };
    const onReady = () => {
      signal?.removeEventListener('abort', onAbort);
      client.off('error', onError);
      // No Nagle: the helper sends up to its window and then waits for our acks, small frames
      // that Nagle held until the server's delayed ACK (40 ms on Linux) whenever the flood had
      // paused; a remote flood stalled ~40 ms per 4 MiB (X1 throughput: 94 → 330 MB/s here).
      client.setNoDelay(true);
      resolve(client);
    };
    client.once('ready', onReady);
    client.once('error', onError);
    client.connect({
      host: options.host,
      port: options.port,
      username: options.username,
      ...(options.privateKey === undefined ? {} : { privateKey: options.privateKey }),
      ...(options.passphrase === undefined ? {} : { passphrase: options.passphrase }),
      ...(options.agent === undefined ? {} : { agent: options.agent }),
      hostVerifier: (key: Buffer) => {
        hostKeyRejected = !verify(key);
        return !hostKeyRejected;
      },
      readyTimeout: options.connectTimeoutMs,
      keepaliveInterval: options.keepaliveIntervalMs,
      keepaliveCountMax: options.keepaliveCountMax,
    });
  });
}

function connectError(
  options: ResolvedSshOptions,
  err: Error & { level?: string },
  hostKeyRejected: boolean,
) {
  const at = `${options.host}:${options.port}`;
  const message = hostKeyRejected
    ? `the host key of ${at} does not match the configured hostKey; check that you reach the right server, then update hostKey`
    : err.level === 'client-authentication'
      ? `user '${options.username}' was refused by ${at} (no configured key was accepted); check username and privateKey/agent`
      : /timed out/i.test(err.message)
        ? `no SSH handshake with ${at} within ${options.connectTimeoutMs} ms; check that sshd runs and is reachable`
        : `cannot connect to ${at}: ${err.message}; check host, port and that sshd runs`;
  return new TetherError('PROVIDER_UNAVAILABLE', message, { cause: err });
}

// `ssh-ed25519 AAAA… comment` (or just the base64) → the key blob the server presents.
function keyBlob(line: string): Buffer {
  const parts = line.trim().split(/\s+/);
  const b64 = parts.length >= 2 ? parts[1]! : parts[0]!;
  return Buffer.from(b64, 'base64');
}

function openHelperChannel(client: ssh2.Client, options: ResolvedSshOptions): Promise<HelperLink> {
  const at = `${options.host}:${options.port}`;
  const dir = options.helperDir === undefined ? '"$HOME"/.cache/tether' : shellQuote(options.helperDir);
  const [python, ...args] = helperArgv('');
  // The directory is the one word the remote shell expands; the rest is quoted as given.
  const words = args.map((word, i) => (i === 2 ? dir : shellQuote(word)));
  const command = `exec ${python} ${words.join(' ')}`;
  return new Promise((resolve, reject) => {
    client.exec(command, (err, channel) => {
      if (err) {
        reject(
          new TetherError('PROVIDER_UNAVAILABLE', `${at} refused an exec channel: ${err.message}`, {
            cause: err,
          }),
        );
        return;
      }
      let stderr = '';
      channel.stderr.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString('utf8')).slice(-4000);
      });
      const exited = new Promise<number | null>((done) =>
        channel.once('exit', (code: number | null) => done(code)),
      );
      bootstrapHelper({ stream: channel, at, stderr: () => stderr, exited }).then((leftover) => {
        resolve({
          kind: 'SSH connection',
          stream: channel,
          leftover,
          stderr: () => stderr,
          destroy: () => client.destroy(),
          onDown: (listener) => {
            client.on('error', (e: Error) => listener(e.message));
            client.on('close', () => listener('the connection closed'));
          },
        });
      }, reject);
    });
  });
}

/** Single-quotes `text` for a POSIX shell (the only remote shell line the provider writes). */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
