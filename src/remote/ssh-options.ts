import { TetherError } from '../errors.js';
import type { EnvPolicy } from '../subprocess/env.js';

/**
 * Where and how the SSH provider connects (X1). A host key check is required: pass the
 * server's public key (`hostKey`, one `ssh-ed25519 AAAA…` line as in `known_hosts` or
 * `/etc/ssh/ssh_host_*_key.pub`) or your own `hostVerifier`.
 */
export interface SshProviderOptions {
  readonly host: string;
  /** Default 22. */
  readonly port?: number;
  readonly username: string;
  /** A private key (OpenSSH or PEM text); or use `agent`. */
  readonly privateKey?: string | Buffer;
  readonly passphrase?: string;
  /** Path of an ssh-agent socket (e.g. `process.env.SSH_AUTH_SOCK`). */
  readonly agent?: string;
  /** The server's public key line; the connection is refused when the server shows another. */
  readonly hostKey?: string;
  /** Decides on the server's raw public key blob instead of `hostKey`. */
  readonly hostVerifier?: (key: Buffer) => boolean;
  /**
   * Keepalive (X3): a probe every `intervalMs`, the connection counts as lost after `countMax`
   * unanswered ones. Default 2000 ms × 3 (lost within about 8 s).
   */
  readonly keepalive?: { readonly intervalMs?: number; readonly countMax?: number };
  /** Bound on one connection attempt, handshake included. Default 5000 ms. */
  readonly connectTimeoutMs?: number;
  /** After a lost connection: attempts to re-attach and the pause before each. Default 3 × 1000 ms. */
  readonly reconnect?: { readonly attempts?: number; readonly delayMs?: number };
  /** Remote directory of the helper and its socket. Default `$HOME/.cache/tether`. */
  readonly helperDir?: string;
  /** How long the helper keeps the trees of a client that went away, then kills them. Default 300000. */
  readonly lingerMs?: number;
  /** How the remote login env is sanitized before a spec's overlay is applied (S3). */
  readonly env?: EnvPolicy;
}

/** The options with defaults filled in, checked. */
export interface ResolvedSshOptions extends SshProviderOptions {
  readonly port: number;
  readonly label: string;
  readonly keepaliveIntervalMs: number;
  readonly keepaliveCountMax: number;
  readonly connectTimeoutMs: number;
  readonly reconnectAttempts: number;
  readonly reconnectDelayMs: number;
  readonly lingerMs: number;
}

/**
 * Fills in defaults and refuses what cannot work, with INVALID_ARGUMENT saying what to pass.
 *
 * @example
 * ```ts
 * resolveSshOptions({ host: 'build-1', username: 'ci', privateKey, hostKey }).label; // 'ci@build-1:22'
 * ```
 */
export function resolveSshOptions(options: SshProviderOptions): ResolvedSshOptions {
  const fail = (message: string) => {
    throw new TetherError('INVALID_ARGUMENT', `createSshProvider: ${message}`);
  };
  if (typeof options.host !== 'string' || options.host === '') fail('pass `host`, the server to connect to');
  if (typeof options.username !== 'string' || options.username === '') fail('pass `username`');
  if (options.privateKey === undefined && options.agent === undefined) {
    fail('pass `privateKey` or `agent` (password login is not supported)');
  }
  if (options.hostKey === undefined && options.hostVerifier === undefined) {
    fail("pass `hostKey` (the server's public key line) or `hostVerifier`: an unverified host is refused");
  }
  const port = options.port ?? 22;
  if (!Number.isInteger(port) || port < 1 || port > 65535) fail(`port must be 1..65535, got ${port}`);
  const positive = (value: number | undefined, fallback: number, name: string): number => {
    const v = value ?? fallback;
    if (!Number.isFinite(v) || v <= 0) fail(`${name} must be a positive number, got ${v}`);
    return v;
  };
  return {
    ...options,
    port,
    label: `${options.username}@${options.host}:${port}`,
    keepaliveIntervalMs: positive(options.keepalive?.intervalMs, 2000, 'keepalive.intervalMs'),
    keepaliveCountMax: positive(options.keepalive?.countMax, 3, 'keepalive.countMax'),
    connectTimeoutMs: positive(options.connectTimeoutMs, 5000, 'connectTimeoutMs'),
    reconnectAttempts: options.reconnect?.attempts ?? 3,
    reconnectDelayMs: positive(options.reconnect?.delayMs, 1000, 'reconnect.delayMs'),
    lingerMs: positive(options.lingerMs, 300_000, 'lingerMs'),
  };
}
