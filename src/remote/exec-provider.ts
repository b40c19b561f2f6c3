import { TetherError } from '../errors.js';
import type { EnvPolicy } from '../subprocess/env.js';
import { openExecLink } from './exec-link.js';
import { createHelperProvider, type RemoteProvider } from './helper-provider.js';

/** Options every exec transport shares (X5). */
export interface ExecTransportOptions {
  /** After a dropped link: attempts to re-attach and the pause before each. Default 3 × 1000 ms. */
  readonly reconnect?: { readonly attempts?: number; readonly delayMs?: number };
  /** Bound on one start of the exec command, upload and greeting included. Default 10000 ms. */
  readonly connectTimeoutMs?: number;
  /**
   * The helper-level keepalive (an exec stream has none of its own): a probe every `intervalMs`,
   * lost after `countMax` unanswered. Default 2000 ms × 3.
   */
  readonly heartbeat?: { readonly intervalMs?: number; readonly countMax?: number };
  /** Helper directory on the host; `~` is the helper user's home. Default `~/.cache/tether`. */
  readonly helperDir?: string;
  /** How long the helper keeps the trees of a client that went away, then kills them. Default 300000. */
  readonly lingerMs?: number;
  /** How the host's env is sanitized before a spec's overlay is applied (S3). */
  readonly env?: EnvPolicy;
}

/** {@link createExecProvider}'s options. */
export interface ExecProviderOptions extends ExecTransportOptions {
  /**
   * A command whose remaining words run on a Linux host with python3 ≥ 3.8, its stdin and stdout
   * reaching them: `['podman', 'exec', '-i', 'c1']`, `['kubectl', 'exec', '-i', 'pod', '--']`.
   * The provider appends `python3 -c <bootstrap> DIR HASH LEN` as separate words.
   */
  readonly argv: readonly [string, ...string[]];
  /** For messages and `provider.label`. Default the argv joined. */
  readonly label?: string;
}

/** The exec provider: a {@link RemoteProvider} over a command's stdin and stdout. */
export type ExecProvider = RemoteProvider;

/**
 * A provider whose trees run under the remote helper reached through any command's stdin and
 * stdout (X5): the same helper, upload-once and version-checked, as over SSH, so jobs, terminals,
 * `stdin_read` proofs, re-attach from cursors and dispose behave alike. The command ending (a
 * killed `podman exec`) is a dropped link: the provider runs it again and re-attaches.
 *
 * @example
 * ```ts
 * const provider = createExecProvider({ argv: ['podman', 'exec', '-i', 'agent-1'], label: 'podman:agent-1' });
 * const rt = await createRuntime({ provider, cwd: '/tmp' });
 * ```
 */
export function createExecProvider(options: ExecProviderOptions): ExecProvider {
  const fail = (message: string) => {
    throw new TetherError('INVALID_ARGUMENT', `createExecProvider: ${message}`);
  };
  if (
    !Array.isArray(options.argv) ||
    options.argv.length === 0 ||
    options.argv.some((w) => typeof w !== 'string')
  ) {
    fail('pass `argv`, the command that reaches the host (e.g. ["podman", "exec", "-i", "c1"])');
  }
  const positive = (value: number | undefined, fallback: number, name: string): number => {
    const v = value ?? fallback;
    if (!Number.isFinite(v) || v <= 0) fail(`${name} must be a positive number, got ${v}`);
    return v;
  };
  const label = options.label ?? options.argv.join(' ');
  const connectTimeoutMs = positive(options.connectTimeoutMs, 10_000, 'connectTimeoutMs');
  const heartbeat = {
    intervalMs: positive(options.heartbeat?.intervalMs, 2000, 'heartbeat.intervalMs'),
    countMax: positive(options.heartbeat?.countMax, 3, 'heartbeat.countMax'),
  };
  const link = {
    argv: options.argv,
    at: label,
    helperDir: options.helperDir ?? '~/.cache/tether',
    connectTimeoutMs,
  };
  return createHelperProvider({
    name: 'exec',
    label,
    kind: 'exec link',
    open: () => openExecLink(link),
    lingerMs: positive(options.lingerMs, 300_000, 'lingerMs'),
    reconnectAttempts: options.reconnect?.attempts ?? 3,
    reconnectDelayMs: positive(options.reconnect?.delayMs, 1000, 'reconnect.delayMs'),
    byeBoundMs: heartbeat.intervalMs,
    connectBoundMs: connectTimeoutMs,
    heartbeat,
    ...(options.env === undefined ? {} : { env: options.env }),
  });
}
